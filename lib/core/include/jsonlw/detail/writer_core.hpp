// The record-type-independent part of JsonlRecordWriter, compiled once in libjsonlw: state,
// counters, logs, the drain coroutine, the I/O thread, flush and close. Where lines go is
// the writer's LineSink (jsonlw/sinks/).
#pragma once

#include <jsonlw/append_result.hpp>
#include <jsonlw/detail/serial_cache.hpp>
#include <jsonlw/error.hpp>
#include <jsonlw/json_line.hpp>
#include <jsonlw/lines.hpp>
#include <jsonlw/writer_options.hpp>
#include <jsonlw/writer_stats.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/strand.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string_view>
#include <string>
#include <system_error>
#include <vector>

namespace jsonlw::detail {

class OtlpRecordForm;

class RingPositions;
class UnitContext;
class SinkSet;

// What the typed engine (RecordEngine<Record>, record_engine.hpp) lends the untyped one: the
// unit it runs on the I/O thread, and its queue's records for close and the serializer
// helpers. Implemented by the typed engine, owned by the typed writer; the core calls it
// under its life guard only (the typed writer may be gone while the core lives on).
class UnitSource {
public:
    // I/O thread: pops a unit — up to unit_batches() batches of batch_records records (fewer
    // once their size hints reach batch_bytes) — has each batch serialized and its lines
    // handed to the sinks, and counts it, all through `unit`. Returns whether the queue may
    // hold more (the unit's last batch was full); false when it popped nothing.
    virtual bool run_unit(UnitContext& unit) noexcept = 0;
    // Close or shutdown, under the consumer lock: pops and destroys every queued record;
    // returns how many.
    virtual std::size_t discard_queued() noexcept = 0;
    // A serializer thread (the I/O thread or a helper), inside WriterCore::preserialize():
    // serialize the staged records of `chunk` into its bytes, each outcome in
    // entries[staging index] (with `chunk_index`).
    virtual void serialize_chunk(SerialChunk& chunk, std::uint32_t chunk_index,
                                 SerialEntry* entries) noexcept = 0;
    // Whether the encoder declared its serialize() safe on several threads at once.
    virtual bool serializes_concurrently() const noexcept = 0;

protected:
    ~UnitSource() = default;
};

enum class Stage { serialize, write };

class WriterCore : public std::enable_shared_from_this<WriterCore> {
public:
    enum class State : std::uint8_t { created, running, inert, disabled, closed };

    WriterCore(boost::asio::any_io_executor ex, WriterOptions opts);
    ~WriterCore();
    WriterCore(const WriterCore&) = delete;
    WriterCore& operator=(const WriterCore&) = delete;

    // The typed engine's constructor: its unit and its queue's positions (both outlive every
    // use the core makes of them: see shutdown()), and whether its encoder overrides
    // write_batch() — only then may it name files with append(), so only then does the sink
    // stack route them (make_sink_stack()).
    void bind(UnitSource* units, RingPositions* ring, bool path_files) noexcept
    {
        units_ = units;
        ring_ = ring;
        path_files_ = path_files;
    }
    // The I/O thread's side of a unit, which the typed engine's run_unit() goes through, and
    // the sink stack it hands the unit's lines to.
    UnitContext& unit_context() noexcept;
    SinkSet& sink_set() noexcept;
    // Creates the directory, starts the sink, then the drain (see JsonlRecordWriter::start).
    void start();
    // The typed writer's destructor: stop intake, wait for a running batch, discard the rest
    // (counted as shutdown). No hook is called after it returns.
    void shutdown() noexcept;

    State state() const noexcept { return state_.load(std::memory_order_acquire); }
    bool accepting() const noexcept
    {
        const State s = state_.load(std::memory_order_relaxed);
        return s == State::created || s == State::running;
    }
    const WriterOptions& options() const noexcept { return opts_; }
    // The I/O thread is writing a unit now; close ran out of time and the append it gave up
    // on has not returned yet (see JsonlRecordWriter). Any thread; snapshots.
    bool appending() const noexcept;
    bool append_outlived_close() const noexcept;
    bool drain_parked() const noexcept
    {
        return wake_state_.load(std::memory_order_acquire) == parked;
    }
    std::uint64_t drain_wakeups() const noexcept;
    const std::filesystem::path& file_path() const noexcept { return file_path_; }
    std::vector<std::filesystem::path> files() const;
    const std::string& writer_id() const noexcept { return writer_id_; }
    const boost::asio::any_io_executor& executor() const noexcept { return ex_; }
    WriterStats stats() const noexcept;

    // --- submit side (any thread) ---
    // The drain's doorbell: 0 while it is awake or polling. A producer reads it after each
    // push and, when it is not 0 (idle_poll 0: parked or lingering), calls wake_drain() with
    // what it read (drain.cpp).
    const std::atomic<std::uint8_t>& doorbell() const noexcept { return wake_state_; }
    void wake_drain(std::uint8_t seen, std::uint64_t pos) noexcept;
    // A polling drain is never woken but by a burst: one push in burst_stride (a power of
    // two, about an eighth of the queue) calls check_burst(), which reads how far the drain
    // is behind and, when a quarter of the queue waits, posts one wake-up (drain.cpp).
    // burst_mask() is burst_stride - 1.
    std::uint64_t burst_mask() const noexcept;
    void check_burst(std::uint64_t pos) noexcept;
    // After a successful push at position `pos`: wake the drain if it parked.
    void after_push(std::uint64_t pos) noexcept
    {
        const std::uint8_t s = wake_state_.load(std::memory_order_seq_cst);
        if (s != awake) [[unlikely]]
            wake_drain(s, pos);
    }
    void count_queue_full() noexcept;
    std::uint64_t queue_full_count() const noexcept;
    void count_closed() noexcept;
    void count_evicted() noexcept;
    // Overflow::block on the caller's thread: wait until the queue may have room or the
    // deadline passes. Returns false at the deadline.
    bool wait_for_space(std::chrono::steady_clock::time_point deadline) noexcept;
    // Overflow::block, asynchronous: `retry` runs (on no particular thread) after the next pop.
    void add_space_waiter(std::function<void()> retry);

    // --- I/O thread: helpers for serialize_batch() and append() ---
    LineBuffer& line_buffer() noexcept { return line_buffer_; }
    // LineFormat::otlp: the running serializer thread's form, in which records are written as
    // OTLP log records; null when records are written as JSON Lines (any other format, or an
    // envelope, or options the form cannot take: the OtlpSink then converts the lines).
    OtlpRecordForm* otlp_form() const noexcept
    {
        return otlp_forms_.empty() ? nullptr : otlp_forms_[current_serializer_slot()].get();
    }
    // Batches per unit: serializer_threads once start() has made the helpers, else 1.
    std::size_t unit_batches() const noexcept { return unit_batches_; }
    // Serializes the unit's `n` staged records ahead, in chunks over the serializer threads,
    // into serial_cache() — when there are helpers and enough records to share; returns
    // whether it did. end_unit() forgets them.
    bool preserialize(std::size_t n) noexcept;
    void end_unit() noexcept { serial_.active = false; }
    const SerialCache& serial_cache() const noexcept { return serial_; }
    // WriterOptions::envelope, around serialize(): open writes {"seq":N,"writer":"…" (no
    // seq when `seq` is null) at the end of `buf`; close joins it with the record's object,
    // which begins at `body` (the first byte after it) — or throws MalformedRecord when the
    // record is not an object.
    void envelope_open(LineBuffer& buf, const std::uint64_t* seq);
    void envelope_close(LineBuffer& buf, std::size_t body);

    // --- async operations (any thread); completion on the handler's associated executor ---
    void async_flush_impl(boost::asio::any_completion_handler<void(error_code)> h);
    void async_reopen_impl(boost::asio::any_completion_handler<void(error_code)> h);
    void async_close_impl(
        boost::asio::any_completion_handler<void(error_code, CloseReport)> h);

private:
    friend class Drain;        // the drain (lib/core/src/engine/drain.hpp) rings the doorbell below
    friend class UnitContext;  // the unit's side of the engine's objects (unit_context.hpp)
    friend class RoomSteps;    // steps for producers blocked for room (lib/core/src/engine/room_steps.hpp)
    struct Impl;
    static constexpr std::uint8_t awake = 0, parked = 1, lingering = 2;

    const WriterOptions opts_;
    const boost::asio::any_io_executor ex_;
    UnitSource* units_ = nullptr;
    RingPositions* ring_ = nullptr;
    bool path_files_ = true;
    std::filesystem::path file_path_;
    std::string writer_id_;
    std::string envelope_writer_;  // ,"writer":"<id>" (escaped once, at start)
    LineBuffer line_buffer_;
    std::vector<std::unique_ptr<OtlpRecordForm>> otlp_forms_;  // one per serializer slot
    SerialCache serial_;             // I/O thread (filled by the serializers in preserialize())
    std::size_t unit_batches_ = 1;   // set by start()
    // Read by every submit(): on a line of its own, away from the I/O thread's state above.
    alignas(64) std::atomic<State> state_{State::created};
    std::atomic<std::uint64_t> final_pushes_{0};
    // The drain's doorbell, the one drain state producers read (inline, in after_push()).
    alignas(64) std::atomic<std::uint8_t> wake_state_{awake};
    std::unique_ptr<Impl> impl_;
};

}  // namespace jsonlw::detail
