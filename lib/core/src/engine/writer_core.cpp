// WriterCore's front: construction, start() and shutdown() (called by the typed writer, on
// its caller's thread), the envelope (I/O thread) and the typed writer's helpers forwarded to
// where they live. Which file owns which part of the core: writer_core_impl.hpp.
#include "writer_core_impl.hpp"

#include <jsonlw/detail/otlp_record_form.hpp>
#include <jsonlw/malformed_record.hpp>


#include <fmt/format.h>

#include <pthread.h>
#include <unistd.h>

#include <algorithm>

namespace jsonlw::detail {

namespace {

// The envelope's generation: the writer's start time in microseconds since the Unix epoch,
// made strictly increasing within the process so two writers never share an id.
std::uint64_t next_generation() noexcept
{
    static std::atomic<std::uint64_t> last{0};
    const auto now = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(
            std::chrono::system_clock::now().time_since_epoch())
            .count());
    std::uint64_t prev = last.load(std::memory_order_relaxed);
    for (;;) {
        const std::uint64_t next = std::max(now, prev + 1);
        if (last.compare_exchange_weak(prev, next, std::memory_order_relaxed)) return next;
    }
}

}  // namespace

WriterCore::Impl::Impl(WriterCore& core)
    : self(core),
      strand(asio::make_strand(core.ex_)),
      close_timer(strand),
      accounting(core.opts_),
      sinks(core.opts_, accounting),
      space(core.opts_),
      waiters(core.ex_),
      drain(core, strand)
{
    if (core.opts_.io_executor) {
        io_ex = *core.opts_.io_executor;
    } else {
        own_io.emplace(1);
        io_ex = own_io->get_executor();
        // Named after the writer's stem ("jsonlw:perf_met"), for top -H and perf sched.
        std::string name = "jsonlw:" + core.opts_.stem;
        name.resize(std::min<std::size_t>(name.size(), 15));
        asio::post(io_ex, [name] { pthread_setname_np(pthread_self(), name.c_str()); });
    }
}

WriterCore::Impl::~Impl()
{
    if (own_io) {
        own_io->stop();
        own_io->join();
    }
    // No I/O task runs any more (each keeps the core alive): a writer destroyed without
    // async_close(), or whose close timed out, still gives its file its final name.
    sinks.close(false);
}

WriterCore::WriterCore(asio::any_io_executor ex, WriterOptions opts)
    : opts_(std::move(opts)), ex_(std::move(ex))
{
    // No directory and no sink: nowhere to write.
    if (opts_.directory.empty() && !opts_.sink) state_.store(State::inert, std::memory_order_relaxed);
    // OTLP records are written straight in their form, one form per serializer thread (slot
    // 0: the I/O thread); an envelope wraps JSON Lines records, so the sink converts those.
    if (opts_.format == LineFormat::otlp && !opts_.envelope && OtlpRecordForm::supports(opts_.otlp)) {
        const std::size_t slots = std::clamp<std::size_t>(opts_.serializer_threads, 1, 64);
        for (std::size_t i = 0; i < slots; ++i)
            otlp_forms_.push_back(std::make_unique<OtlpRecordForm>(opts_.otlp));
    }
    impl_ = std::make_unique<Impl>(*this);
}

WriterCore::~WriterCore() = default;

void WriterCore::start()
{
    State expected = State::created;
    if (!state_.compare_exchange_strong(expected, State::running, std::memory_order_acq_rel))
        return;  // inert, disabled, closed, or already started
    std::error_code ec;
    if (!opts_.directory.empty()) {  // a writer with a sink may have none
        std::filesystem::create_directories(opts_.directory, ec);
        if (!ec && !std::filesystem::is_directory(opts_.directory, ec))
            ec = std::make_error_code(std::errc::not_a_directory);
    }
    if (ec) {
        impl_->accounting.say(LogLevel::error, &WriterMessages::disabling, ec.message(),
                              opts_.directory.native());
        state_.store(State::disabled, std::memory_order_release);
        // Records submitted before start() cannot be written anywhere.
        if (units_) impl_->accounting.count_write_error(units_->discard_queued());
        return;
    }
    const std::string host = host_name();
    Impl& d = *impl_;
    SinkContext ctx{opts_.directory, opts_.stem,      opts_.subject, host,
                    ::getpid(),      opts_.durability, opts_.file_io ? opts_.file_io : posix_file_io(),
                    opts_.file_mode, opts_.log,      {},           {}};
    // The sink is owned by this core: it never calls writer_stats after the core is gone.
    ctx.writer_stats = [this] { return stats(); };
    ec = d.sinks.start(ctx, path_files_);
    if (ec) {
        d.accounting.say(LogLevel::error, &WriterMessages::disabling, ec.message(),
                         d.sinks.describe());
        state_.store(State::disabled, std::memory_order_release);
        if (units_) d.accounting.count_write_error(units_->discard_queued());
        return;
    }
    file_path_ = d.sinks.file_path();
    for (const auto& form : otlp_forms_) form->start(host, ::getpid());
    writer_id_ = fmt::format("{}-{}-{}", host, ::getpid(), next_generation());
    if (opts_.envelope) {
        LineBuffer b;
        JsonLine(b).begin_object().key("writer").string(writer_id_);
        envelope_writer_.assign(b.data() + 1, b.size() - 1);  // "writer":"…" (escaped)
    }
    if (!opts_.messages.started.empty())
        d.accounting.say(LogLevel::info, &WriterMessages::started, opts_.directory.native(),
                         d.sinks.describe());
    impl_->start_serializers();
    impl_->drain.start();
}

void WriterCore::shutdown() noexcept
{
    Impl& d = *impl_;
    if (!d.handoff.begin_shutdown()) return;
    const State s = state_.load(std::memory_order_acquire);
    if (s == State::created || s == State::running) state_.store(State::closed);
    // The push count is final once intake is closed; stats() uses it from now on.
    if (units_) final_pushes_.store(ring_->close(), std::memory_order_release);
    d.life->detaching.store(true, std::memory_order_seq_cst);
    // Wake threads blocked in submit(); they see the queue closed. An I/O-side pace holds the
    // life guard through its waits: cut it short.
    d.space.wake_all();
    d.drain.cut_pace(true);
    // Wait for a running batch (it checks `detaching` between batches).
    for (int a = d.life->active.load(); a != 0; a = d.life->active.load()) d.life->active.wait(a);
    d.drain.drop_pace();  // no guard held: no run, no cut in flight
    if (units_) {
        d.handoff.lock();
        const std::size_t n = units_->discard_queued();
        d.handoff.discarded_at_shutdown(n);
        d.accounting.count_shutdown(n);
        d.handoff.unlock();
        // async_submit() waiters: their retry finds the queue closed and completes.
        for (auto& r : d.space.take_async()) r();
    }
    // No I/O task runs any more (each holds the life guard while it runs): the sink is
    // closed here, on the destructor's thread, so that what it writes at close (a file's final
    // name, a durable sidecar) is there when the writer is gone. After a close, a no-op.
    d.sinks.close(false);
    asio::post(d.strand, [core = shared_from_this()] { core->impl_->drain.wake(); });
}

void WriterCore::envelope_open(LineBuffer& buf, const std::uint64_t* seq)
{
    if (seq) {
        static constexpr std::string_view head = "{\"seq\":";
        buf.append(head.data(), head.data() + head.size());
        fmt::format_to(std::back_inserter(buf), "{},", *seq);
    } else {
        buf.push_back('{');
    }
    buf.append(envelope_writer_.data(), envelope_writer_.data() + envelope_writer_.size());
}

void WriterCore::envelope_close(LineBuffer& buf, std::size_t body)
{
    const std::size_t n = buf.size() - body;
    if (n < 2 || buf[body] != '{' || buf[buf.size() - 1] != '}')
        throw MalformedRecord("under the envelope a record must be a JSON object");
    if (n == 2) {  // {} adds nothing to the envelope's members
        buf.resize(body);
        buf.push_back('}');
    } else {
        buf[body] = ',';
    }
}

std::vector<std::filesystem::path> WriterCore::files() const { return impl_->sinks.files(); }

}  // namespace jsonlw::detail
