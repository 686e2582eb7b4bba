// RawOutputWriter::State: the outputs in flight and what each chunk and each piece of
// per-token data adds to them. Used by RawOutputWriter's hook side on the caller's threads,
// under State::mu; the I/O thread only hands buffers back through `shells`.
#pragma once

#include <jsonlw/raw_output_writer.hpp>

#include "record_shells.hpp"

#include <atomic>
#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <utility>

namespace jsonlw {

// The time of a chunk, read from the clock on first use: most chunks of an output (neither
// its first nor its final one) need none.
class LazyNow {
public:
    WallClock::time_point operator()() noexcept
    {
        if (!have_) {
            t_ = WallClock::now();
            have_ = true;
        }
        return t_;
    }

private:
    WallClock::time_point t_{};
    bool have_ = false;
};

// A record leaving the hook, or none: what std::optional<RawOutputRecord> is, without the
// cost libstdc++ 12 pays to make an empty one (it zeroes all 330 bytes: two per chunk were a
// fifth of on_chunk's time). On the caller's stack only.
class Outgoing {
public:
    Outgoing() noexcept {}
    ~Outgoing()
    {
        if (engaged_) rec_.~RawOutputRecord();
    }
    Outgoing(const Outgoing&) = delete;
    Outgoing& operator=(const Outgoing&) = delete;

    RawOutputRecord& emplace(RawOutputRecord&& r) noexcept
    {
        if (engaged_) rec_.~RawOutputRecord();
        ::new (&rec_) RawOutputRecord(std::move(r));
        engaged_ = true;
        return rec_;
    }
    explicit operator bool() const noexcept { return engaged_; }
    RawOutputRecord& operator*() noexcept { return rec_; }
    RawOutputRecord* operator->() noexcept { return &rec_; }

private:
    union {
        RawOutputRecord rec_;
    };
    bool engaged_ = false;
};

// Owned by RawOutputWriter; every member but the atomics and `shells` is used under `mu`.
struct RawOutputWriter::State {
    using Key = std::pair<std::uint64_t, std::uint32_t>;  // (request_id, output_index)
    struct Pending {
        RawOutputRecord rec;
        std::list<Key>::iterator lru;
    };
    using Iter = std::map<Key, Pending>::iterator;

    State(bool enabled_, std::size_t max_pending_);

    // Whether the record has anything to write (an output ended before any text or token
    // leaves none).
    static bool produced(const RawOutputRecord& r) noexcept
    {
        return !r.frames_text.empty() || !r.token_ids.empty();
    }

    // One chunk, under the lock: updates the output's state; `evicted` gets the output that
    // made room, `done` the finished one. False when recording stopped (disable() clears
    // the map under the lock, and nothing may be added after that). On an exception the
    // chunk's output is dropped (a half-updated output would write a wrong record) and
    // `done` stays empty; `evicted` is kept.
    bool take(const OutputChunk& c, LazyNow& now, Outgoing& evicted, Outgoing& done);

    // Per-token data for an output in flight, under the lock. False: no such output. On an
    // exception (allocation) the output is kept with the entries it had.
    bool attach(const Key& key, std::size_t position, std::span<const TokenLogprob> data,
                const std::optional<FirstGenLogitsView>& first_gen);

    // Takes the output's state out of the map as a partial record (the caller sets its
    // end_reason), or nothing when it produced nothing. Never throws: it only moves.
    std::optional<RawOutputRecord> release(Iter it, WallClock::time_point now) noexcept;

    const bool enabled;
    const std::size_t max_pending;
    const std::string file_name;
    std::atomic<bool> recording;

    mutable std::mutex mu;
    bool closing = false;            // under mu: async_close() ran; no new output is kept
    std::map<Key, Pending> outputs;  // ordered: a request's outputs are adjacent
    std::list<Key> lru;              // front: the most recently updated output
    detail::RecordShells shells;     // written records' buffers, for new outputs

    std::atomic<std::uint64_t> finished{0}, partial{0}, evicted{0}, released_empty{0},
        not_recorded{0}, hook_failures{0}, tokens_without_data{0}, token_data_orphaned{0},
        chunks_after_close{0};
    // Lines the encoder (I/O and serializer threads) made with Capture::metadata.
    std::atomic<std::uint64_t> metadata_captured{0};

private:
    // Strong guarantee: on an exception nothing was added.
    Iter insert(const Key& key);
    void touch(Iter it) noexcept { lru.splice(lru.begin(), lru, it->second.lru); }
    Iter erase(Iter it) noexcept
    {
        lru.erase(it->second.lru);
        return outputs.erase(it);
    }
};

}  // namespace jsonlw
