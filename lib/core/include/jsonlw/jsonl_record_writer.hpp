// JsonlRecordWriter<Record>: writes records as JSON Lines from inside an Asio program without
// blocking it. It is the engine — the queue, batching, the drain, the I/O thread, accounting,
// logs, flush and close — and drives an encoder that says how a record becomes a line and
// where a batch's lines go. Two ways to give it one:
//   - an encoder object (RecordEncoder<Record>, record_encoder.hpp), owned by the engine:
//       JsonlRecordWriter<MyRecord> w(ex, opts, std::make_shared<MyEncoder>());
//   - a subclass overriding the virtual functions below (serialize, and write_batch for a
//     layout other than the sink), which the engine calls through an adapter.
//
// Thread-safety: submit(), async_submit(), async_flush(), async_close() and stats() may be
// called from any thread, concurrently. start() from one thread. The encoder's functions run
// on the writer's I/O thread, one batch at a time, and with WriterOptions::serializer_threads
// > 1 and concurrent_serialize() true, serialize() also on the writer's helper threads (for
// different records of a unit, before that unit's write_batch() calls). Lifetime: destroy the
// writer before the execution context of its executor. An encoder object lives as long as
// the engine needs it; a subclass whose overrides use its own members calls shutdown() first
// thing in its destructor (the engine cannot stop before a derived object's members are
// destroyed).
#pragma once

#include <jsonlw/append_result.hpp>
#include <jsonlw/detail/bounded_ring.hpp>
#include <jsonlw/detail/full_queue.hpp>
#include <jsonlw/detail/record_engine.hpp>
#include <jsonlw/detail/writer_core.hpp>
#include <jsonlw/json_line.hpp>
#include <jsonlw/lines.hpp>
#include <jsonlw/malformed_record.hpp>
#include <jsonlw/record_encoder.hpp>
#include <jsonlw/submit_result.hpp>
#include <jsonlw/writer_options.hpp>
#include <jsonlw/writer_stats.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <concepts>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <span>
#include <system_error>
#include <type_traits>
#include <vector>

namespace jsonlw {

namespace detail {
template <class Record>
class WriterHooks;
}

template <class Record>
class JsonlRecordWriter {
public:
    using record_type = Record;

    // Reads the options once; allocates the queue. Creates nothing on disk until start().
    // `encoder` (not null: std::invalid_argument) is kept until the engine is done with it.
    // The encoder's type tells the engine which layout functions it overrides
    // (detail::encoder_shape, record_encoder.hpp).
    template <class Encoder>
        requires std::derived_from<Encoder, RecordEncoder<Record>>
    JsonlRecordWriter(boost::asio::any_io_executor ex, WriterOptions opts,
                      std::shared_ptr<Encoder> encoder)
        : JsonlRecordWriter(std::move(ex), std::move(opts), std::move(encoder),
                            detail::encoder_shape<Encoder, Record>())
    {
    }
    JsonlRecordWriter(boost::asio::any_io_executor ex, WriterOptions opts,
                      std::shared_ptr<RecordEncoder<Record>> encoder)
        : JsonlRecordWriter(std::move(ex), std::move(opts), std::move(encoder),
                            detail::EncoderShape{})
    {
    }
    // For a subclass: its virtual functions below are the encoder.
    JsonlRecordWriter(boost::asio::any_io_executor ex, WriterOptions opts)
        : JsonlRecordWriter(std::move(ex), std::move(opts),
                            std::make_shared<detail::WriterHooks<Record>>(*this))
    {
    }
    JsonlRecordWriter(const JsonlRecordWriter&) = delete;
    JsonlRecordWriter& operator=(const JsonlRecordWriter&) = delete;
    virtual ~JsonlRecordWriter() { shutdown(); }

    // Creates the directory and starts the drain. Idempotent. No directory: stays inert. A
    // directory that cannot be created: one error log, the writer disabled; never throws.
    void start() { core_->start(); }

    // Whether records are accepted: false when inert (no directory), disabled (the directory
    // could not be created) or closed.
    bool enabled() const noexcept { return core_->accepting(); }

    // Never blocks (but under Overflow::block, where it waits at most block_timeout); takes
    // no lock, makes no system call, allocates nothing beyond moving the record.
    SubmitResult submit(Record rec)
    {
        if (!core_->accepting()) [[unlikely]]
            return refused();
        std::uint64_t pos = 0;  // set by a push that went in
        const auto p = ring_.try_push(rec, pos);  // sets pos: read it after the push
        if (const auto r = pushed(p, pos)) return *r;
        return detail::FullQueue<Record>::submit(*core_, ring_, rec);
    }

    // Like submit(), but the record is built in its queue cell from `args` — no temporary
    // to move. Needs a constructor that cannot throw; when the queue is full, the record is
    // built outside it and handled as submit() handles it.
    template <class... Args>
        requires std::is_nothrow_constructible_v<Record, Args&&...>
    SubmitResult emplace(Args&&... args)
    {
        if (!core_->accepting()) [[unlikely]]
            return refused();
        std::uint64_t pos = 0;  // set by a push that went in
        const auto make = [&](void* at) noexcept { ::new (at) Record(std::forward<Args>(args)...); };
        const auto p = ring_.try_push_with(make, pos);  // sets pos: read it after the push
        if (const auto r = pushed(p, pos)) return *r;
        Record rec(std::forward<Args>(args)...);
        return detail::FullQueue<Record>::submit(*core_, ring_, rec);
    }

    // Like submit(), but under Overflow::block it waits for room without blocking its thread
    // (at most block_timeout). Completion signature: void(SubmitResult).
    template <class Token>
    auto async_submit(Record rec, Token&& token)
    {
        return boost::asio::async_initiate<Token, void(SubmitResult)>(
            [this](auto handler, Record r) {
                if (core_->options().overflow != Overflow::block || !core_->accepting()) {
                    const SubmitResult res = submit(std::move(r));
                    boost::asio::post(core_->executor(),
                                      boost::asio::append(std::move(handler), res));
                    return;
                }
                detail::FullQueue<Record>::submit_async(core_, ring_, std::move(r),
                                                        std::move(handler));
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
    // Whether the drain is parked (only with idle_poll 0: it polls otherwise), so the next
    // submit() posts it a wake-up. For monitoring and tests; any thread.
    bool drain_parked() const noexcept { return core_->drain_parked(); }
    // How many times a submit() woke the drain: each wake-up is a post to your executor —
    // its lock, maybe a system call — on the submitting thread. A polling drain is woken
    // only by a burst (a quarter of the queue waiting before its next look; once until it
    // runs); with idle_poll 0, also after each park and by a full batch while it lingers.
    // For monitoring and tests; any thread.
    std::uint64_t drain_wakeups() const noexcept { return core_->drain_wakeups(); }
    // The default layout's file (empty before start(), or when inert or disabled). With an
    // open suffix or rotation: the final name of the first file (see files()).
    const std::filesystem::path& file_path() const noexcept { return core_->file_path(); }
    // The default layout's files so far, oldest first: closed ones by their final name, the
    // one being written by its current name (with the open suffix). Any thread; copies.
    std::vector<std::filesystem::path> files() const { return core_->files(); }
    // The envelope's "writer": <host>-<pid>-<generation> (set by start()).
    const std::string& writer_id() const noexcept { return core_->writer_id(); }
    const WriterOptions& options() const noexcept { return core_->options(); }
    // Close ran out of time and the append it gave up on has not returned (a disk that
    // stopped answering): destroying the writer now waits for that append, possibly forever.
    // A process that must exit regardless can leak the writer instead (the Python package
    // does at interpreter exit). Any thread.
    bool append_outlived_close() const noexcept { return core_->append_outlived_close(); }
    // The I/O thread is writing a batch now (serializing it or inside its append): destroying
    // the writer waits for that to end. Any thread; a snapshot.
    bool appending() const noexcept { return core_->appending(); }
    boost::asio::any_io_executor get_executor() const noexcept { return core_->executor(); }

protected:
    // Whether the I/O thread's last pop filled a batch (records waited beyond it): an intake
    // may do some of the encoder's work on the submitting thread then (JsonTextWriter). One
    // load of a line the I/O thread writes only when the answer changes.
    bool backlogged() const noexcept { return ring_.backlogged(); }

    // A subclass's encoder (unused when the writer was given an encoder object): the same
    // functions as RecordEncoder's, with the batch helpers below as members.
    //
    // How a record becomes one line. Throw MalformedRecord to drop it alone (counted,
    // logged); any other exception drops it as unexpected. A subclass must override it.
    virtual void serialize(const Record& rec, JsonLine& line)
    {
        (void)rec;
        (void)line;
        throw std::logic_error("JsonlRecordWriter: serialize() is not overridden and the "
                               "writer was given no encoder");
    }

    // Where a batch's lines go. The default sends them to the writer's sink
    // (WriterOptions::sink; by default a FileSink, the file file_path() names). An override
    // groups the records, calls serialize_batch() per group and write_lines() (the sink,
    // under a key) or append() (a file it names) per group; every record must end up in
    // exactly one of them (a record neither produces counts as unexpected).
    virtual void write_batch(std::span<const Record> batch)
    {
        engine_.write_lines({}, engine_.serialize_batch(batch));
    }

    // Which other exceptions from serialize() mean "cannot be represented" (default none).
    // May run on a serializer helper (see concurrent_serialize()).
    virtual bool malformed_error(const std::exception&) const noexcept { return false; }

    // --- Serialization on several threads (WriterOptions::serializer_threads) ---
    // Return true when serialize() (and malformed_error(), begin_chunk()) may run on several
    // threads at once for different records: it reads only its record and state that is
    // constant while the writer runs, or per-thread state indexed by serializer_slot(). The
    // default, false, keeps serialize() on the I/O thread whatever serializer_threads says
    // (start() logs a warning when it asks for more). Read once, by start().
    virtual bool concurrent_serialize() const noexcept { return false; }
    // Which serializer thread is running: 0 on the I/O thread, 1 .. serializer_threads - 1
    // on the helpers. For per-thread scratch state in serialize(); the slot's state is never
    // used by two threads at once.
    static std::size_t serializer_slot() noexcept { return detail::current_serializer_slot(); }
    // Batch-wide preparation (RawJsonWriter validates a batch as one document stream), called
    // on the thread that will serialize `chunk` before any of its records: a helper's chunk
    // ahead of write_batch(), or on the I/O thread the whole batch before write_batch() when
    // it was not serialized ahead. Default nothing.
    virtual void begin_chunk(std::span<const Record> chunk) noexcept { (void)chunk; }
    // Whether `rec`, one of the batch's records, was already serialized ahead (write_batch()
    // then needs no batch-wide preparation of its own for it). I/O thread.
    bool preserialized(const Record& rec) const noexcept { return engine_.preserialized(rec); }

    // A size estimate in bytes, used to cap a batch at batch_bytes (default 0: unknown).
    virtual std::size_t record_bytes(const Record&) const noexcept { return 0; }

    // The batch helpers of BatchOutput (record_encoder.hpp), for write_batch(). I/O thread
    // only. serialize_batch(): a group's lines, valid until the next call (the pointer form
    // for records not adjacent in the batch). write_lines(): to the writer's sink under
    // `key` (a PartitionedFileSink's file). append(): to a file `path` (created with its
    // parents; fsync per durability), through the same chain and encoding. Each counts what
    // the sink reports (written, unknown, write_error).
    Lines serialize_batch(std::span<const Record> group) { return engine_.serialize_batch(group); }
    Lines serialize_batch(std::span<const Record* const> group)
    {
        return engine_.serialize_batch(group);
    }
    AppendResult append(const std::filesystem::path& path, const Lines& lines) noexcept
    {
        return engine_.append(path, lines);
    }
    AppendResult write_lines(std::string_view key, const Lines& lines) noexcept
    {
        return engine_.write_lines(key, lines);
    }

    // Stops the writer for good: intake closed, the running batch waited for, the queue
    // discarded (counted as shutdown). The destructor calls it; a subclass whose overrides
    // use its own members calls it first in its destructor. Harmless twice.
    void shutdown() noexcept
    {
        if (core_) core_->shutdown();
    }

private:
    friend class detail::WriterHooks<Record>;

    JsonlRecordWriter(boost::asio::any_io_executor ex, WriterOptions opts,
                      std::shared_ptr<RecordEncoder<Record>> encoder, detail::EncoderShape shape)
        : core_(std::make_shared<detail::WriterCore>(std::move(ex), std::move(opts))),
          ring_(core_->options().queue_capacity, core_->options().huge_pages),
          engine_(core_, ring_,
                  encoder ? std::move(encoder)
                          : throw std::invalid_argument("JsonlRecordWriter: no encoder"),
                  shape)
    {
    }
    using Ring = detail::BoundedRing<Record>;

    // A push that went in (or found the queue closed), counted and answered — the drain
    // woken if it parked; nullopt when the queue was full (the overflow policy's turn).
    std::optional<SubmitResult> pushed(typename Ring::Push p, std::uint64_t pos) noexcept
    {
        switch (p) {
        case Ring::Push::ok:
            // The drain parked (or lingers for a batch; idle_poll 0 only): wake it. One load
            // while it is awake or polling.
            if (const std::uint8_t seen = doorbell_.load(std::memory_order_seq_cst)) [[unlikely]]
                core_->wake_drain(seen, pos);
            // One push in burst_stride: is a burst filling the queue while the drain sleeps?
            // The push before asks for the line that check reads.
            else if (const std::uint64_t k = pos & burst_mask_; k == 0) [[unlikely]]
                core_->check_burst(pos);
            else if (k == burst_mask_) [[unlikely]]
                ring_.prefetch_consumed();
            return SubmitResult::accepted;
        case Ring::Push::closed: core_->count_closed(); return SubmitResult::closed;
        case Ring::Push::full: break;
        }
        return std::nullopt;
    }
    SubmitResult refused() noexcept
    {
        if (core_->state() == detail::WriterCore::State::closed) {
            core_->count_closed();
            return SubmitResult::closed;
        }
        return SubmitResult::disabled;
    }

    std::shared_ptr<detail::WriterCore> core_;
    const std::atomic<std::uint8_t>& doorbell_ = core_->doorbell();  // the drain's, in core_
    const std::uint64_t burst_mask_ = core_->burst_mask();           // burst_stride - 1
    Ring ring_;                            // the queue: producers push, the I/O thread pops
    detail::RecordEngine<Record> engine_;  // the I/O thread's side: the unit, serialization
};

}  // namespace jsonlw

// The subclass adapter: defined after the writer whose virtual functions it forwards.
#include <jsonlw/detail/subclass_encoder.hpp>
