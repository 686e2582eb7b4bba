// RawOutputWriter: the engine given its encoder (raw_output_encoder.cpp; the line each record
// becomes is raw_output_line.cpp's), and the hook on the caller's threads: chunks, per-token
// data and ends taken into the outputs in flight (raw_output_state.cpp, under one mutex), the
// hook's counters and warnings, and the submission of finished records.
#include <jsonlw/raw_output_writer.hpp>

#include "raw_output_encoder.hpp"
#include "raw_output_state.hpp"

#include <jsonlw/detail/log_marks.hpp>
#include <jsonlw/sinks/partitioned_file_sink.hpp>

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace jsonlw {

std::filesystem::path raw_output_dir_from_env()
{
    const char* v = std::getenv(raw_output_dir_env);
    return v ? std::filesystem::path(v) : std::filesystem::path();
}

namespace {

WriterOptions writer_options(const RawOutputOptions& o)
{
    WriterOptions w = o;
    w.stem = "raw";
    w.subject = "raw output";
    // The OTLP form (docs/otlp.md); gen_ai.* names are OpenTelemetry's GenAI semantic
    // conventions, not yet stable.
    w.otlp = OtlpOptions::merged(
        std::move(w.otlp),
        {.event_name = "jsonlw.raw_output",
         .time_fields = {{"/finished_at", OtlpTimeField::Kind::iso8601_utc}},
         .attributes = {{"gen_ai.usage.output_tokens", "/num_output_tokens"}}});
    // The hour folders: each group's key is "<UTC hour>/raw-<pid>.jsonl". No directory:
    // recording is off, whatever the sink.
    if (w.directory.empty()) w.sink.reset();
    else if (!w.sink) w.sink = std::make_shared<PartitionedFileSink>();
    return w;
}

}  // namespace

RawOutputWriter::RawOutputWriter(boost::asio::any_io_executor ex, RawOutputOptions opts)
    : RawOutputWriter(std::move(ex), opts,
                      std::make_shared<State>(!opts.directory.empty(), opts.max_pending))
{
}

RawOutputWriter::RawOutputWriter(boost::asio::any_io_executor ex, const RawOutputOptions& opts,
                                 std::shared_ptr<State> state)
    : JsonlRecordWriter<RawOutputRecord>(std::move(ex), writer_options(opts),
                                         make_encoder(state, opts)),
      state_(std::move(state)),
      before_submit_(opts.before_submit)
{
    if (!state_->enabled)
        warn(fmt::format("Raw output recording is off: {} / RawOutputOptions::directory is "
                         "not set",
                         raw_output_dir_env));
}

std::shared_ptr<RecordEncoder<RawOutputRecord>> RawOutputWriter::make_encoder(
    const std::shared_ptr<State>& state, const RawOutputOptions& opts)
{
    // The encoder borrows the state's shells and metadata counter; owning a share of the
    // state beside it, it keeps them alive for as long as the engine keeps the encoder, which
    // is past this class's destruction (the base stops the engine after that).
    struct Owner {
        std::shared_ptr<State> state;
        detail::RawOutputEncoder encoder;
    };
    const std::shared_ptr<Owner> owner(new Owner{
        state, detail::RawOutputEncoder(
                   state->file_name, state->shells,
                   detail::RawOutputEncoder::Capturing{opts.capture, opts.serializer_threads,
                                                       state->metadata_captured})});
    return {owner, &owner->encoder};
}

RawOutputWriter::~RawOutputWriter() = default;

void RawOutputWriter::start()
{
    const bool was_accepting = enabled();
    JsonlRecordWriter<RawOutputRecord>::start();
    // The directory could not be created (the writer logged why): nothing to record into.
    if (was_accepting && !enabled()) disable();
}

void RawOutputWriter::close_requested() noexcept
{
    if (close_requested_.exchange(true, std::memory_order_acq_rel) || !enabled()) return;
    {
        // Under the lock: a chunk that started an output before this is seen by end_all().
        std::lock_guard lock(state_->mu);
        state_->closing = true;
    }
    end_all("shutdown");
}

void RawOutputWriter::on_chunk(const OutputChunk& c) noexcept
{
    State& s = *state_;
    if (!s.enabled) return;
    Outgoing evicted, done;
    bool taken = false;
    if (s.recording.load(std::memory_order_acquire)) {
        try {
            LazyNow now;
            std::lock_guard lock(s.mu);
            taken = s.take(c, now, evicted, done);
        } catch (const std::exception& e) {
            taken = true;
            hook_failed(1, e.what());
        } catch (...) {
            taken = true;
            hook_failed(1, "unknown exception");
        }
    }
    if (!taken && c.is_final) not_recorded(1);
    if (evicted) deliver_safely(std::move(*evicted));
    if (done) deliver_safely(std::move(*done));
}

void RawOutputWriter::on_token_data(std::uint64_t request_id, std::uint32_t output_index,
                                    std::size_t position, std::span<const TokenLogprob> data,
                                    std::optional<FirstGenLogitsView> first_gen) noexcept
{
    State& s = *state_;
    if (!s.enabled || (data.empty() && !first_gen)) return;
    bool attached = false;
    if (s.recording.load(std::memory_order_acquire)) {
        try {
            std::lock_guard lock(s.mu);
            attached =
                s.attach(State::Key{request_id, output_index}, position, data, first_gen);
        } catch (const std::exception& e) {
            attached = true;  // the output stays, with the data it had
            hook_failed(0, e.what());
        } catch (...) {
            attached = true;
            hook_failed(0, "unknown exception");
        }
    }
    if (!attached)
        s.token_data_orphaned.fetch_add(std::max<std::size_t>(data.size(), 1),
                                        std::memory_order_relaxed);
}

void RawOutputWriter::on_request_end(std::uint64_t request_id, std::string_view reason) noexcept
{
    State& s = *state_;
    if (!s.enabled) return;
    std::vector<RawOutputRecord> out;
    std::uint64_t failed = 0;
    std::string failure;
    try {
        const auto now = WallClock::now();
        std::lock_guard lock(s.mu);
        auto it = s.outputs.lower_bound(State::Key{request_id, 0});
        while (it != s.outputs.end() && it->first.first == request_id) {
            std::optional<RawOutputRecord> rec = s.release(it++, now);
            if (!rec) continue;
            try {
                rec->end_reason = reason.empty() ? std::string_view("ended") : reason;
                out.push_back(std::move(*rec));
            } catch (const std::exception& e) {
                ++failed;
                failure = e.what();
            }
        }
    } catch (const std::exception& e) {  // the mutex: nothing was taken out
        hook_failed(0, e.what());
    }
    if (failed != 0) hook_failed(failed, failure);
    for (auto& rec : out) deliver_safely(std::move(rec));
}

void RawOutputWriter::end_all(std::string_view reason) noexcept
{
    State& s = *state_;
    if (!s.enabled) return;
    std::vector<std::uint64_t> ids;
    try {
        std::lock_guard lock(s.mu);
        for (const auto& [key, pending] : s.outputs)
            if (ids.empty() || ids.back() != key.first) ids.push_back(key.first);
    } catch (const std::exception& e) {
        hook_failed(0, e.what());
    }
    // Request by request, so the lock is never held for long and records flow as they come.
    for (std::uint64_t id : ids) on_request_end(id, reason);
}

bool RawOutputWriter::recording() const noexcept
{
    return state_->recording.load(std::memory_order_acquire);
}

std::size_t RawOutputWriter::pending_outputs() const noexcept
{
    std::lock_guard lock(state_->mu);
    return state_->outputs.size();
}

std::uint64_t RawOutputWriter::hook_failures() const noexcept
{
    return state_->hook_failures.load(std::memory_order_relaxed);
}

std::size_t RawOutputWriter::max_pending() const noexcept { return state_->max_pending; }

RawOutputCounters RawOutputWriter::counters() const noexcept
{
    const State& s = *state_;
    RawOutputCounters c;
    c.pending = pending_outputs();
    c.finished = s.finished.load(std::memory_order_relaxed);
    c.partial = s.partial.load(std::memory_order_relaxed);
    c.evicted = s.evicted.load(std::memory_order_relaxed);
    c.released_empty = s.released_empty.load(std::memory_order_relaxed);
    c.not_recorded = s.not_recorded.load(std::memory_order_relaxed);
    c.hook_failures = s.hook_failures.load(std::memory_order_relaxed);
    c.tokens_without_data = s.tokens_without_data.load(std::memory_order_relaxed);
    c.token_data_orphaned = s.token_data_orphaned.load(std::memory_order_relaxed);
    c.chunks_after_close = s.chunks_after_close.load(std::memory_order_relaxed);
    c.metadata_captured = s.metadata_captured.load(std::memory_order_relaxed);
    return c;
}

void RawOutputWriter::deliver(RawOutputRecord&& rec)
{
    if (before_submit_) before_submit_(rec);
    if (submit(std::move(rec)) == SubmitResult::disabled) {
        // start() failed but was called through the base: stop keeping state.
        not_recorded(1);
        disable();
    }
    // dropped_queue_full and closed are counted (and logged) by the base.
}

void RawOutputWriter::not_recorded(std::uint64_t records) noexcept
{
    const auto before = state_->not_recorded.fetch_add(records, std::memory_order_relaxed);
    if (records != 0 && detail::crosses_log_mark(before, before + records)) {
        try {
            warn(fmt::format("Dropped {} raw output record(s): the writer is disabled",
                             before + records));
        } catch (...) {
            // Out of memory while formatting: the count still tells.
        }
    }
}

void RawOutputWriter::deliver_safely(RawOutputRecord&& rec) noexcept
{
    try {
        deliver(std::move(rec));
    } catch (const std::exception& e) {
        hook_failed(1, e.what());
    } catch (...) {
        hook_failed(1, "unknown exception");
    }
}

void RawOutputWriter::hook_failed(std::uint64_t records, std::string_view what) noexcept
{
    const auto before = state_->hook_failures.fetch_add(records, std::memory_order_relaxed);
    if (records == 0 || detail::crosses_log_mark(before, before + records)) {
        try {
            warn(fmt::format("Dropped {} raw output record(s): {}", before + records, what));
        } catch (...) {
            // Formatting failed too (out of memory): the count still tells.
        }
    }
}

void RawOutputWriter::disable() noexcept
{
    State& s = *state_;
    if (!s.recording.exchange(false, std::memory_order_acq_rel)) return;
    std::uint64_t lost = 0;
    {
        std::lock_guard lock(s.mu);
        for (const auto& [key, pending] : s.outputs)
            lost += State::produced(pending.rec) ? 1 : 0;
        s.outputs.clear();
        s.lru.clear();
    }
    not_recorded(lost);
}

void RawOutputWriter::warn(std::string_view message) const noexcept
{
    try {
        if (const LogSink& sink = options().log) sink(LogLevel::warning, message);
        else log_to_stderr(LogLevel::warning, message);
    } catch (...) {
        // A throwing log sink must not reach the caller of the hook.
    }
}

}  // namespace jsonlw
