// RawOutputWriter::State: what each chunk and each piece of per-token data adds to the outputs
// in flight, eviction, and the record an output becomes when it leaves (raw_output_state.hpp).
#include "raw_output_state.hpp"

#include "raw_output_logprobs.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace jsonlw {
namespace {

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
        f.dtype, f.vocab, std::vector<std::byte>(f.bytes.begin(), f.bytes.end()),
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
    if (c.trace_context && !r.trace_context) r.trace_context = c.trace_context;
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

RawOutputWriter::State::State(bool enabled_, std::size_t max_pending_)
    : enabled(enabled_),
      max_pending(std::max<std::size_t>(max_pending_, 1)),
      file_name(fmt::format("raw-{}.jsonl", ::getpid())),
      recording(enabled_)
{
}

bool RawOutputWriter::State::take(const OutputChunk& c, LazyNow& now, Outgoing& evicted,
                                  Outgoing& done)
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
        shells.take(r);
        begin(r, c, now());
        add(r, c);
        finish(r, c, now());
        done.emplace(std::move(r));
    } else {
        if (it == outputs.end()) {
            if (outputs.size() >= max_pending) {
                // The least recently updated output makes room (the list and the map
                // always hold the same keys).
                if (std::optional<RawOutputRecord> r = release(outputs.find(lru.back()), now())) {
                    evicted.emplace(std::move(*r));
                    evicted->end_reason = "evicted";
                    this->evicted.fetch_add(1, std::memory_order_relaxed);
                }
            }
            it = insert(key);
            shells.take(it->second.rec);
            begin(it->second.rec, c, now());
        } else {
            touch(it);
        }
        try {
            add(it->second.rec, c);
            if (c.is_final) finish(it->second.rec, c, now());
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

bool RawOutputWriter::State::attach(const Key& key, std::size_t position,
                                    std::span<const TokenLogprob> data,
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

RawOutputWriter::State::Iter RawOutputWriter::State::insert(const Key& key)
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

std::optional<RawOutputRecord> RawOutputWriter::State::release(Iter it,
                                                              WallClock::time_point now) noexcept
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

}  // namespace jsonlw
