// JsonlRecordWriter<Record>: writes records as JSON Lines from inside an Asio program without
// blocking it. The base owns the queue, batching, the drain, the I/O thread, accounting, logs,
// flush and close; a subclass says only how a record becomes a line (serialize) and, for a
// layout other than one file, where lines go (write_batch).
//
// Thread-safety: submit(), async_submit(), async_flush(), async_close() and stats() may be
// called from any thread, concurrently. start() from one thread. serialize() and write_batch()
// run on the writer's I/O thread, one batch at a time. Lifetime: destroy the writer before the
// execution context of its executor; a subclass whose serialize()/write_batch() use its own
// members calls shutdown() first thing in its destructor.
#pragma once

#include <jsonlw/append_result.hpp>
#include <jsonlw/detail/bounded_ring.hpp>
#include <jsonlw/detail/writer_core.hpp>
#include <jsonlw/json_line.hpp>
#include <jsonlw/lines.hpp>
#include <jsonlw/malformed_record.hpp>
#include <jsonlw/submit_result.hpp>
#include <jsonlw/writer_options.hpp>
#include <jsonlw/writer_stats.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <system_error>
#include <vector>

namespace jsonlw {

template <class Record>
class JsonlRecordWriter : private detail::QueueHooks {
public:
    using record_type = Record;

    // Reads the options once; allocates the queue. Creates nothing on disk until start().
    JsonlRecordWriter(boost::asio::any_io_executor ex, WriterOptions opts)
        : core_(std::make_shared<detail::WriterCore>(std::move(ex), std::move(opts))),
          ring_(core_->options().queue_capacity)
    {
        core_->bind(this);
        staging_.reserve(core_->options().batch_records);
        if (core_->options().envelope) staging_seq_.reserve(core_->options().batch_records);
    }
    JsonlRecordWriter(const JsonlRecordWriter&) = delete;
    JsonlRecordWriter& operator=(const JsonlRecordWriter&) = delete;
    virtual ~JsonlRecordWriter() { shutdown(); }

    // Creates the directory and starts the drain. Idempotent. No directory: stays inert. A
    // directory that cannot be created: one error log, the writer disabled; never throws.
    void start()
    {
        const bool was_created = core_->state() == detail::WriterCore::State::created;
        core_->start([this] { on_start(); });
        if (was_created && core_->state() == detail::WriterCore::State::disabled) on_disabled();
    }

    // Whether records are accepted: false when inert (no directory), disabled (the directory
    // could not be created) or closed.
    bool enabled() const noexcept { return core_->accepting(); }

    // Never blocks (but under Overflow::block, where it waits at most block_timeout); takes
    // no lock, makes no system call, allocates nothing beyond moving the record.
    SubmitResult submit(Record rec)
    {
        if (!core_->accepting()) [[unlikely]]
            return refused();
        std::uint64_t pos;
        switch (ring_.try_push(rec, pos)) {
        case Ring::Push::ok:
            core_->after_push(pos);
            return SubmitResult::accepted;
        case Ring::Push::closed:
            core_->count_closed();
            return SubmitResult::closed;
        case Ring::Push::full:
            break;
        }
        return on_full(rec);
    }

    // Like submit(), but under Overflow::block it waits for room without blocking its thread
    // (at most block_timeout). Completion signature: void(SubmitResult).
    template <class Token>
    auto async_submit(Record rec, Token&& token)
    {
        return boost::asio::async_initiate<Token, void(SubmitResult)>(
            [this](auto handler, Record r) {
                async_submit_impl(std::move(r), std::move(handler));
            },
            token, std::move(rec));
    }

    // Completes once every record submitted before the call is written or counted as dropped.
    // Signature: void(jsonlw::error_code) — boost::system::error_code, as Asio's own
    // operations; success, or errc::timed_out when close gave up first.
    template <class Token>
    auto async_flush(Token&& token)
    {
        return boost::asio::async_initiate<Token, void(error_code)>(
            [core = core_](auto handler) { core->async_flush_impl(std::move(handler)); }, token);
    }

    // Stops intake, writes everything queued and completes — no later than shutdown_timeout
    // (+ a small margin) — with the final counters. Signature: void(jsonlw::error_code,
    // CloseReport); the error_code is success even when time ran out (see report.drained),
    // so use_awaitable and use_future hand over the report instead of throwing.
    template <class Token>
    auto async_close(Token&& token)
    {
        if (!close_requested_.exchange(true, std::memory_order_acq_rel) && core_->accepting())
            on_close_requested();
        return boost::asio::async_initiate<Token, void(error_code, CloseReport)>(
            [core = core_](auto handler) { core->async_close_impl(std::move(handler)); }, token);
    }

    // Closes the default layout's file at the next batch boundary: with an open suffix or
    // rotation, renames it to its final name and writes on in the next numbered file;
    // otherwise the next append opens file_path() again — created anew if an external tool
    // (logrotate without copytruncate) moved it away. For SIGHUP: call it from the handler
    // of an asio::signal_set. Any thread; never blocks.
    void reopen() { async_reopen([](error_code) {}); }

    // Like reopen(); completes once the file is closed (and renamed). Signature:
    // void(jsonlw::error_code): success, or the rename's error (the file then keeps its
    // open suffix; no record is lost). Completes at once when there is no drain (inert,
    // disabled, closed).
    template <class Token>
    auto async_reopen(Token&& token)
    {
        return boost::asio::async_initiate<Token, void(error_code)>(
            [core = core_](auto handler) { core->async_reopen_impl(std::move(handler)); }, token);
    }

    WriterStats stats() const noexcept { return core_->stats(); }
    // Whether the drain is parked: idle past its polling (idle_poll), so the next submit()
    // posts it a wake-up. For monitoring and tests; any thread.
    bool drain_parked() const noexcept { return core_->drain_parked(); }
    // The default layout's file (empty before start(), or when inert or disabled). With an
    // open suffix or rotation: the final name of the first file (see files()).
    const std::filesystem::path& file_path() const noexcept { return core_->file_path(); }
    // The default layout's files so far, oldest first: closed ones by their final name, the
    // one being written by its current name (with the open suffix). Any thread; copies.
    std::vector<std::filesystem::path> files() const { return core_->files(); }
    // The envelope's "writer": <host>-<pid>-<generation> (set by start()).
    const std::string& writer_id() const noexcept { return core_->writer_id(); }
    const WriterOptions& options() const noexcept { return core_->options(); }
    boost::asio::any_io_executor get_executor() const noexcept { return core_->executor(); }

protected:
    // How a record becomes one line. Throw MalformedRecord to drop it alone (counted,
    // logged); any other exception drops it as unexpected.
    virtual void serialize(const Record& rec, JsonLine& line) = 0;

    // Where a batch's lines go. The default appends them to file_path(). An override groups
    // the records, calls serialize_batch() per group and append() per group; every record
    // must end up in exactly one of them (a record neither produces counts as unexpected).
    virtual void write_batch(std::span<const Record> batch)
    {
        core_->append_main(serialize_batch(batch));
    }

    // Which other exceptions from serialize() mean "cannot be represented" (default none).
    virtual bool malformed_error(const std::exception&) const noexcept { return false; }

    // A size estimate in bytes, used to cap a batch at batch_bytes (default 0: unknown).
    virtual std::size_t record_bytes(const Record&) const noexcept { return 0; }

    // Called once on the I/O thread when async_close() has written every queued record,
    // before the final fsync and before files are closed: write trailers or sidecars here.
    // Not called when close runs out of time. Exceptions are logged as unexpected.
    virtual void on_close() {}

    // Called once by start(), on its thread, when the directory exists and just before the
    // drain starts (nothing else of the writer runs yet). Not called when inert or disabled.
    virtual void on_start() {}

    // Called once by start(), on its thread, when the directory could not be created (the
    // writer is now disabled): release what the subclass holds for records to come.
    virtual void on_disabled() {}

    // Called once by the first async_close(), on its thread, while intake is still open:
    // submit what the subclass still holds (outputs in flight, say) so close writes it.
    virtual void on_close_requested() {}

    // Called on the I/O thread when the writer has been idle for the interval given to
    // set_idle_interval() (before start()) after writing something: publish state here.
    virtual void on_idle() {}
    void set_idle_interval(std::chrono::milliseconds interval) noexcept
    {
        core_->set_idle_interval(interval);
    }

    // Serializes a group with the shared malformed accounting. The result stays valid until
    // the next call. I/O thread only. The pointer form serves layouts that group records
    // which are not adjacent in the batch (a file per kind, say).
    Lines serialize_batch(std::span<const Record> group)
    {
        return serialize_each(group, [](const Record& r) -> const Record& { return r; });
    }
    Lines serialize_batch(std::span<const Record* const> group)
    {
        return serialize_each(group, [](const Record* r) -> const Record& { return *r; });
    }

    // Appends complete lines to `path` (created with its parents; descriptor kept open, one
    // write per call, fsync per durability). Counts them as written; on failure, lines whose
    // bytes partly landed as unknown and the rest as write_error, with a rate-limited
    // warning. I/O thread only.
    AppendResult append(const std::filesystem::path& path, const Lines& lines) noexcept
    {
        return core_->append(path, lines);
    }

    // For a write_batch whose lines go somewhere other than a file (a message broker, a
    // socket): how they fared, counted as append() counts — `delivered` written (their
    // delivered_bytes added to stats().bytes; by default, all of lines' bytes when every
    // line was delivered, else none), `failed` write_error, the rest of lines.records
    // unknown (no outcome known). Call it once per group of lines serialize_batch()
    // returned; the caller logs its own failures (it knows them best). I/O thread only.
    AppendResult settle(const Lines& lines, std::uint64_t delivered, std::uint64_t failed,
                        std::optional<std::uint64_t> delivered_bytes = {}) noexcept
    {
        const std::uint64_t bytes = delivered_bytes ? *delivered_bytes
                                    : delivered == lines.records ? lines.bytes.size()
                                                                 : 0;
        return core_->settle(lines, delivered, failed, bytes);
    }

    // Stops the writer for good: intake closed, the running batch waited for, the queue
    // discarded (counted as shutdown). Subclasses with state call it in their destructor.
    void shutdown() noexcept
    {
        if (core_) core_->shutdown();
    }

private:
    using Ring = detail::BoundedRing<Record>;

    // The envelope "seq" of a staged record; nullptr when `rec` is
    // not one of the batch's records (a group an override built elsewhere).
    const std::uint64_t* staged_seq(const Record& rec) const noexcept
    {
        const auto at = reinterpret_cast<std::uintptr_t>(&rec);
        const auto first = reinterpret_cast<std::uintptr_t>(staging_.data());
        if (at < first) return nullptr;
        const std::size_t i = (at - first) / sizeof(Record);
        return i < staging_seq_.size() ? &staging_seq_[i] : nullptr;
    }

    template <class Range, class Deref>
    Lines serialize_each(const Range& group, Deref deref)
    {
        LineBuffer& buf = core_->line_buffer();
        buf.clear();
        Lines out;
        const bool envelope = core_->options().envelope;
        for (const auto& item : group) {
            const Record& rec = deref(item);
            const std::size_t at = buf.size();
            if (envelope) core_->envelope_open(buf, staged_seq(rec));
            const std::size_t body = buf.size();
            JsonLine line(buf);
            try {
                serialize(rec, line);
                if (line.view().empty()) throw MalformedRecord("serialize() wrote nothing");
                if (envelope) core_->envelope_close(buf, body);
                buf.push_back('\n');
                ++out.records;
                out.sanitized += line.sanitized() ? 1 : 0;
            } catch (const MalformedRecord& e) {
                buf.resize(at);
                core_->on_malformed(e.what());
            } catch (const std::exception& e) {
                buf.resize(at);
                if (malformed_error(e)) core_->on_malformed(e.what());
                else core_->on_unexpected(detail::Stage::serialize, e.what());
            } catch (...) {
                buf.resize(at);
                core_->on_unexpected(detail::Stage::serialize, "unknown exception");
            }
        }
        out.bytes = {buf.data(), buf.size()};
        return out;
    }

    SubmitResult refused() noexcept
    {
        if (core_->state() == detail::WriterCore::State::closed) {
            core_->count_closed();
            return SubmitResult::closed;
        }
        return SubmitResult::disabled;
    }

    SubmitResult on_full(Record& rec)
    {
        const auto& o = core_->options();
        std::uint64_t pos;
        if (o.overflow == Overflow::drop_oldest) {
            for (;;) {
                if (ring_.try_pop_into([](Record&&) noexcept {})) core_->count_evicted();
                switch (ring_.try_push(rec, pos)) {
                case Ring::Push::ok: core_->after_push(pos); return SubmitResult::accepted;
                case Ring::Push::closed: core_->count_closed(); return SubmitResult::closed;
                case Ring::Push::full: continue;
                }
            }
        }
        if (o.overflow == Overflow::block) {
            const auto deadline = std::chrono::steady_clock::now() + o.block_timeout;
            for (;;) {
                if (!core_->wait_for_space(deadline)) break;
                switch (ring_.try_push(rec, pos)) {
                case Ring::Push::ok: core_->after_push(pos); return SubmitResult::accepted;
                case Ring::Push::closed: core_->count_closed(); return SubmitResult::closed;
                case Ring::Push::full: continue;
                }
            }
        }
        core_->count_queue_full();
        return SubmitResult::dropped_queue_full;
    }

    // Overflow::block without blocking a thread: retried after each pop until block_timeout.
    // state: 0 idle, 1 a retry is pushing, 2 completed. Whoever moves it to 2 completes.
    struct BlockedSubmit {
        Record rec;
        boost::asio::any_completion_handler<void(SubmitResult)> handler;
        boost::asio::steady_timer timer;
        std::atomic<int> state{0};
        std::atomic<bool> expired{false};
        BlockedSubmit(Record r, boost::asio::any_completion_handler<void(SubmitResult)> h,
                      const boost::asio::any_io_executor& ex)
            : rec(std::move(r)), handler(std::move(h)), timer(ex)
        {
        }
    };

    // Through the writer's executor, then on the handler's associated executor.
    static void complete(const std::shared_ptr<BlockedSubmit>& op, SubmitResult r)
    {
        boost::asio::post(op->timer.get_executor(),
                          boost::asio::append(std::move(op->handler), r));
    }

    static void expire(const std::shared_ptr<detail::WriterCore>& core,
                       const std::shared_ptr<BlockedSubmit>& op)
    {
        int idle = 0;
        if (!op->state.compare_exchange_strong(idle, 2, std::memory_order_acq_rel)) return;
        core->count_queue_full();
        complete(op, SubmitResult::dropped_queue_full);
    }

    void try_blocked(const std::shared_ptr<BlockedSubmit>& op)
    {
        int idle = 0;
        if (!op->state.compare_exchange_strong(idle, 1, std::memory_order_acq_rel)) return;
        std::uint64_t pos;
        switch (ring_.try_push(op->rec, pos)) {
        case Ring::Push::ok:
            core_->after_push(pos);
            op->state.store(2, std::memory_order_release);
            op->timer.cancel();
            return complete(op, SubmitResult::accepted);
        case Ring::Push::closed:
            core_->count_closed();
            op->state.store(2, std::memory_order_release);
            op->timer.cancel();
            return complete(op, SubmitResult::closed);
        case Ring::Push::full:
            op->state.store(0, std::memory_order_release);
            if (op->expired.load(std::memory_order_acquire)) return expire(core_, op);
            core_->add_space_waiter([this, op] { try_blocked(op); });
            return;
        }
    }

    void async_submit_impl(Record rec,
                           boost::asio::any_completion_handler<void(SubmitResult)> handler)
    {
        if (core_->options().overflow != Overflow::block || !core_->accepting()) {
            const SubmitResult r = submit(std::move(rec));
            boost::asio::post(core_->executor(), boost::asio::append(std::move(handler), r));
            return;
        }
        auto op = std::make_shared<BlockedSubmit>(std::move(rec), std::move(handler),
                                                  core_->executor());
        op->timer.expires_after(core_->options().block_timeout);
        op->timer.async_wait([core = core_, op](boost::system::error_code ec) {
            if (ec) return;  // cancelled: the record went in (or was refused as closed)
            op->expired.store(true, std::memory_order_release);
            expire(core, op);
        });
        try_blocked(op);
    }

    // --- detail::QueueHooks ---
    std::size_t pop_batch(std::size_t max_records, std::size_t max_bytes) noexcept override
    {
        std::size_t bytes = 0;
        const bool envelope = core_->options().envelope;
        // The envelope's seq: queue position + refusals so far (read once per batch: the sum
        // stays strictly increasing, and refused records become gaps like dropped ones).
        const std::uint64_t refused = envelope ? core_->queue_full_count() : 0;
        // staging_ (and staging_seq_) hold batch_records already: push_back does not
        // allocate (nor throw).
        const auto take = [&](Record&& r, std::uint64_t pos) noexcept {
            bytes += record_bytes(r);
            staging_.push_back(std::move(r));
            if (envelope) staging_seq_.push_back(pos + refused);
        };
        while (staging_.size() < max_records && bytes < max_bytes && ring_.try_pop_into(take)) {
        }
        return staging_.size();
    }
    void write_staged() noexcept override
    {
        try {
            write_batch(std::span<const Record>(staging_.data(), staging_.size()));
        } catch (const std::exception& e) {
            core_->on_unexpected(detail::Stage::write, e.what());
        } catch (...) {
            core_->on_unexpected(detail::Stage::write, "unknown exception");
        }
        staging_.clear();
        staging_seq_.clear();
    }
    void closing_io() noexcept override
    {
        try {
            on_close();
        } catch (const std::exception& e) {
            core_->on_unexpected(detail::Stage::write, e.what());
        } catch (...) {
            core_->on_unexpected(detail::Stage::write, "unknown exception");
        }
    }
    void idle_io() noexcept override
    {
        try {
            on_idle();
        } catch (const std::exception& e) {
            core_->on_unexpected(detail::Stage::write, e.what());
        } catch (...) {
            core_->on_unexpected(detail::Stage::write, "unknown exception");
        }
    }
    std::size_t discard_queued() noexcept override
    {
        std::size_t n = 0;
        while (ring_.consumed() < ring_.claimed()) {
            if (ring_.try_pop_into([](Record&&) noexcept {})) ++n;
        }
        return n;
    }
    std::uint64_t claimed() const noexcept override { return ring_.claimed(); }
    std::uint64_t consumed() const noexcept override { return ring_.consumed(); }
    std::uint64_t close_intake() noexcept override { return ring_.close(); }
    std::size_t queued() const noexcept override { return ring_.size(); }

    std::shared_ptr<detail::WriterCore> core_;
    std::atomic<bool> close_requested_{false};
    Ring ring_;
    std::vector<Record> staging_;            // I/O thread only
    std::vector<std::uint64_t> staging_seq_;  // their envelope seq numbers, under envelope
};

}  // namespace jsonlw
