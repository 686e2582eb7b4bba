// RecordShells: the buffers of written RawOutputRecords, handed back by the I/O thread to the
// hook so that an output's text, frame ends and token ids reuse memory the caller's thread
// allocated, instead of each record costing mallocs there and frees on the I/O thread (which
// contend for the caller's malloc arena: measured, the largest cost of a hook call).
#pragma once

#include <jsonlw/raw_output_record.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace jsonlw::detail {

// A fixed ring of cleared buffer sets with one producer, put() on the I/O thread (from
// RawOutputWriter::recycle), and one consumer at a time, take() under the hook's mutex. Owns
// the kept buffers; neither side blocks or allocates: a full ring frees the buffers as
// before, an empty one leaves the record to allocate its own.
class RecordShells {
public:
    static constexpr std::size_t capacity = 256;  // a power of two
    // Bigger buffers are freed, not kept: one long output must not pin its memory.
    static constexpr std::size_t max_text_bytes = 64 * 1024;
    static constexpr std::size_t max_ids = 16 * 1024;

    // I/O thread: keeps r's buffers (emptied) when there is room and they are not too big.
    void put(RawOutputRecord& r) noexcept
    {
        const std::uint64_t t = tail_.load(std::memory_order_relaxed);
        if (t - head_.load(std::memory_order_acquire) == capacity) return;
        if (r.frames_text.capacity() > max_text_bytes || r.token_ids.capacity() > max_ids ||
            r.frame_ends.capacity() > max_ids || r.logprobs.capacity() > max_ids)
            return;
        if (r.token_ids.capacity() == 0 && r.frames_text.capacity() < 32) return;  // nothing
        Shell& s = slots_[t % capacity];
        r.frames_text.clear();
        r.frame_ends.clear();
        r.token_ids.clear();
        r.logprobs.clear();
        s.text.swap(r.frames_text);
        s.ends.swap(r.frame_ends);
        s.ids.swap(r.token_ids);
        s.logprobs.swap(r.logprobs);
        tail_.store(t + 1, std::memory_order_release);
    }

    // The hook's thread, under its mutex: gives `r`, a record with empty buffers, a kept set
    // of buffers if there is one (what r held goes back in the slot, to be freed or reused).
    void take(RawOutputRecord& r) noexcept
    {
        const std::uint64_t h = head_.load(std::memory_order_relaxed);
        if (h == tail_.load(std::memory_order_acquire)) return;
        Shell& s = slots_[h % capacity];
        r.frames_text.swap(s.text);
        r.frame_ends.swap(s.ends);
        r.token_ids.swap(s.ids);
        r.logprobs.swap(s.logprobs);
        head_.store(h + 1, std::memory_order_release);
    }

private:
    struct Shell {
        std::string text;
        std::vector<std::size_t> ends;
        std::vector<std::int32_t> ids;
        std::vector<TokenLogprob> logprobs;
    };
    std::array<Shell, capacity> slots_{};
    alignas(64) std::atomic<std::uint64_t> head_{0};  // the next slot take() empties
    alignas(64) std::atomic<std::uint64_t> tail_{0};  // the next slot put() fills
};

}  // namespace jsonlw::detail
