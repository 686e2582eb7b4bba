// RawOutputWriter's hook side, on the caller's threads: the outputs in flight (under one mutex),
// what each chunk and each piece of per-token data adds, eviction, ending, the hook's
// counters and warnings; and write_batch, which sends each batch's lines to their hour folders.
// The line each record becomes is raw_output_line.cpp's.
#include <jsonlw/raw_output_writer.hpp>

#include "raw_output_logprobs.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <cstdlib>
#include <exception>
#include <list>
#include <map>
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

using Key = std::pair<std::uint64_t, std::uint32_t>;  // (request_id, output_index)

WriterOptions writer_options(const RawOutputOptions& o)
{
    WriterOptions w;
    apply_writer_options(o, w);  // every field RawOutputOptions offers, by name
    w.stem = "raw";
    w.subject = "raw output";
    return w;
}

bool produced(const RawOutputRecord& r) noexcept
{
    return !r.frames_text.empty() || !r.token_ids.empty();
}

// Logged at the first occurrence, then every 1000th (counts may jump by more than one).
bool crosses_log_mark(std::uint64_t before, std::uint64_t after) noexcept
{
    return before == 0 || before / 1000 != after / 1000;
}

TokenLogprob unknown_logprob(std::int32_t id) noexcept
{
    TokenLogprob t;
    t.token_id = id;
    t.logprob = std::numeric_limits<double>::quiet_NaN();
    t.known = false;
    return t;
}

void begin(RawOutputRecord& r, const OutputChunk& c, WallClock::time_point now) noexcept
{
    r.request_id = c.request_id;
    r.output_index = c.output_index;
    r.started_at = now;
    r.streaming = c.streaming;
}

// Extends the logprob entries to `n` positions with "unknown" ones (never shortens: data
// that arrived early for later positions stays).
void pad_logprobs(RawOutputRecord& r, std::size_t n)
{
    r.logprobs.reserve(n);
    for (std::size_t i = r.logprobs.size(); i < n; ++i)
        r.logprobs.push_back(unknown_logprob(i < r.token_ids.size() ? r.token_ids[i] : 0));
}

void copy_first_gen(RawOutputRecord& r, const FirstGenLogitsView& f)
{
    r.first_gen_logits.emplace(FirstGenLogitsData{
        std::string(f.dtype), f.vocab, std::vector<std::byte>(f.bytes.begin(), f.bytes.end()),
        f.overflow_to_inf});
}

// What one chunk adds. May throw (allocation); the caller then drops the output.
void add(RawOutputRecord& r, const OutputChunk& c)
{
    if (!c.text_diff.empty()) {
        r.frames_text.append(c.text_diff);
        r.frame_ends.push_back(r.frames_text.size());
    }
    const std::size_t base = r.token_ids.size();
    r.token_ids.insert(r.token_ids.end(), c.token_ids_diff.begin(), c.token_ids_diff.end());
    if (!c.logprobs_diff.empty() || c.token_data_follows || !r.logprobs.empty()) {
        // Keep the logprob arrays aligned with token_ids: a gap becomes "unknown" entries;
        // surplus entries of the chunk are ignored.
        pad_logprobs(r, r.token_ids.size());
        const std::size_t n = std::min(c.token_ids_diff.size(), c.logprobs_diff.size());
        for (std::size_t i = 0; i < n; ++i) r.logprobs[base + i] = c.logprobs_diff[i];
    }
    if (c.first_gen_logits && !r.first_gen_logits) copy_first_gen(r, *c.first_gen_logits);
    r.aborted = r.aborted || c.aborted;
    if (c.disagg_request_id && !r.disagg_request_id) r.disagg_request_id = c.disagg_request_id;
    // The engine's text so far must end with this diff and be as long as the frames: a cheap
    // check per chunk that catches a second sequence taking over the output index.
    if (c.text && !c.is_final &&
        (c.text->size() != r.frames_text.size() || !c.text->ends_with(c.text_diff)))
        r.frames_consistent = false;
}

// The record leaves the hook: its logprob entries become exactly one per token id (early
// data past the last token is dropped). Returns the positions without per-token data.
std::uint64_t settle_logprobs(RawOutputRecord& r) noexcept
{
    if (r.logprobs.empty()) return 0;
    // add() keeps at least one entry per id once there is one (it pads before it returns).
    if (r.logprobs.size() > r.token_ids.size()) r.logprobs.resize(r.token_ids.size());
    return std::uint64_t(std::count_if(r.logprobs.begin(), r.logprobs.end(), detail::missing));
}

void finish(RawOutputRecord& r, const OutputChunk& c, WallClock::time_point now)
{
    r.finished_at = now;
    if (c.text) {
        r.frames_consistent = *c.text == r.frames_text;
        if (!r.frames_consistent) r.reported_text.emplace(*c.text);
    }
}

}  // namespace

struct RawOutputWriter::State {
    struct Pending {
        RawOutputRecord rec;
        std::list<Key>::iterator lru;
    };

    State(bool enabled_, std::size_t max_pending_)
        : enabled(enabled_),
          max_pending(std::max<std::size_t>(max_pending_, 1)),
          file_name(fmt::format("raw-{}.jsonl", ::getpid())),
          recording(enabled_)
    {
    }

    const bool enabled;
    const std::size_t max_pending;
    const std::string file_name;
    std::atomic<bool> recording;

    mutable std::mutex mu;
    bool closing = false;            // under mu: async_close() ran; no new output is kept
    std::map<Key, Pending> outputs;  // ordered: a request's outputs are adjacent
    std::list<Key> lru;              // front: the most recently updated output

    std::atomic<std::uint64_t> finished{0}, partial{0}, evicted{0}, released_empty{0},
        not_recorded{0}, hook_failures{0}, tokens_without_data{0}, token_data_orphaned{0},
        chunks_after_close{0};

    using Iter = std::map<Key, Pending>::iterator;

    // One chunk, under the lock: updates the output's state; `evicted` gets the output that
    // made room, `done` the finished one. False when recording stopped (disable() clears
    // the map under the lock, and nothing may be added after that). On an exception the
    // chunk's output is dropped (a half-updated output would write a wrong record) and
    // `done` stays empty; `evicted` is kept.
    bool take(const OutputChunk& c, WallClock::time_point now,
              std::optional<RawOutputRecord>& evicted, std::optional<RawOutputRecord>& done)
    {
        if (!recording.load(std::memory_order_relaxed)) return false;
        const Key key{c.request_id, c.output_index};
        auto it = outputs.find(key);
        // After close no output starts: it could never be written. (A final chunk still makes
        // its one-chunk record below, which the closed queue refuses and counts as closed.)
        if (it == outputs.end() && closing && !c.is_final) {
            chunks_after_close.fetch_add(1, std::memory_order_relaxed);
            return true;
        }
        if (it == outputs.end() && c.is_final) {
            // A one-chunk output (non-streaming): never enters the map.
            RawOutputRecord r;
            begin(r, c, now);
            add(r, c);
            finish(r, c, now);
            done.emplace(std::move(r));
        } else {
            if (it == outputs.end()) {
                if (outputs.size() >= max_pending) {
                    // The least recently updated output makes room (the list and the map
                    // always hold the same keys).
                    evicted = release(outputs.find(lru.back()), now);
                    if (evicted) {
                        evicted->end_reason = "evicted";
                        this->evicted.fetch_add(1, std::memory_order_relaxed);
                    }
                }
                it = insert(key);
                begin(it->second.rec, c, now);
            } else {
                touch(it);
            }
            try {
                add(it->second.rec, c);
                if (c.is_final) finish(it->second.rec, c, now);
            } catch (...) {
                erase(it);
                throw;
            }
            if (c.is_final) {
                done.emplace(std::move(it->second.rec));
                erase(it);
            }
        }
        if (done) {
            finished.fetch_add(1, std::memory_order_relaxed);
            tokens_without_data.fetch_add(settle_logprobs(*done), std::memory_order_relaxed);
        }
        return true;
    }

    // Per-token data for an output in flight, under the lock. False: no such output. On an
    // exception (allocation) the output is kept with the entries it had.
    bool attach(const Key& key, std::size_t position, std::span<const TokenLogprob> data,
                const std::optional<FirstGenLogitsView>& first_gen)
    {
        if (!recording.load(std::memory_order_relaxed)) return false;
        auto it = outputs.find(key);
        if (it == outputs.end()) return false;
        touch(it);
        RawOutputRecord& r = it->second.rec;
        pad_logprobs(r, std::max(r.token_ids.size(), position + data.size()));
        std::copy(data.begin(), data.end(), r.logprobs.begin() + std::ptrdiff_t(position));
        if (first_gen && !r.first_gen_logits) copy_first_gen(r, *first_gen);
        return true;
    }

    // Strong guarantee: on an exception nothing was added.
    Iter insert(const Key& key)
    {
        lru.push_front(key);
        try {
            auto it = outputs.try_emplace(key).first;
            it->second.lru = lru.begin();
            return it;
        } catch (...) {
            lru.pop_front();
            throw;
        }
    }
    void touch(Iter it) noexcept { lru.splice(lru.begin(), lru, it->second.lru); }
    Iter erase(Iter it) noexcept
    {
        lru.erase(it->second.lru);
        return outputs.erase(it);
    }

    // Takes the output's state out of the map as a partial record (the caller sets its
    // end_reason), or nothing when it produced nothing. Never throws: it only moves.
    std::optional<RawOutputRecord> release(Iter it, WallClock::time_point now) noexcept
    {
        std::optional<RawOutputRecord> out;
        if (produced(it->second.rec)) {
            out.emplace(std::move(it->second.rec));
            out->finished_at = now;
            out->frames_consistent = false;  // no final text to check the frames against
            partial.fetch_add(1, std::memory_order_relaxed);
            tokens_without_data.fetch_add(settle_logprobs(*out), std::memory_order_relaxed);
        } else {
            released_empty.fetch_add(1, std::memory_order_relaxed);
        }
        erase(it);
        return out;
    }
};

RawOutputWriter::RawOutputWriter(boost::asio::any_io_executor ex, RawOutputOptions opts)
    : JsonlRecordWriter<RawOutputRecord>(std::move(ex), writer_options(opts)),
      state_(std::make_unique<State>(!opts.directory.empty(), opts.max_pending))
{
    if (!state_->enabled)
        warn(fmt::format("Raw output recording is off: {} / RawOutputOptions::directory is "
                         "not set",
                         raw_output_dir_env));
}

RawOutputWriter::~RawOutputWriter() { shutdown(); }

void RawOutputWriter::on_disabled()
{
    // The base logged why; without a directory there is nothing to record into.
    disable();
}

void RawOutputWriter::on_close_requested()
{
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
    std::optional<RawOutputRecord> evicted, done;
    bool taken = false;
    if (s.recording.load(std::memory_order_acquire)) {
        try {
            const auto now = WallClock::now();
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
            attached = s.attach(Key{request_id, output_index}, position, data, first_gen);
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
        auto it = s.outputs.lower_bound(Key{request_id, 0});
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
    return c;
}

void RawOutputWriter::deliver(RawOutputRecord&& rec)
{
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
    if (records != 0 && crosses_log_mark(before, before + records)) {
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
    if (records == 0 || crosses_log_mark(before, before + records)) {
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
        for (const auto& [key, pending] : s.outputs) lost += produced(pending.rec) ? 1 : 0;
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

// --- I/O thread (serialize and record_bytes: raw_output_line.cpp) ---

void RawOutputWriter::write_batch(std::span<const RawOutputRecord> batch)
{
    if (batch.empty()) return;
    using std::chrono::floor;
    using std::chrono::hours;
    const auto path_for = [this](WallClock::time_point tp) {
        return options().directory / utc_hour(tp) / state_->file_name;
    };
    const auto first = floor<hours>(batch.front().finished_at);
    const bool one_hour = std::all_of(batch.begin(), batch.end(), [first](const auto& r) {
        return floor<hours>(r.finished_at) == first;
    });
    if (one_hour) {
        this->append(path_for(batch.front().finished_at), this->serialize_batch(batch));
        return;
    }
    // Records that straddle an hour: one group per hour, in order of first appearance.
    std::vector<std::pair<decltype(first), std::vector<const RawOutputRecord*>>> groups;
    for (const RawOutputRecord& r : batch) {
        const auto h = floor<hours>(r.finished_at);
        auto g = std::find_if(groups.begin(), groups.end(), [h](const auto& x) { return x.first == h; });
        if (g == groups.end()) {
            groups.emplace_back(h, std::vector<const RawOutputRecord*>{});
            g = std::prev(groups.end());
        }
        g->second.push_back(&r);
    }
    for (const auto& [h, group] : groups)
        this->append(path_for(group.front()->finished_at),
                     this->serialize_batch(std::span<const RawOutputRecord* const>(group)));
}

}  // namespace jsonlw
