// TopK: reference_row's k best of a row, as a min-heap of at most k heap keys
// (reference_keys.hpp) on the stack. One per row, owned by the reference_row call that computes
// that row (one thread); no allocation.
#pragma once

#include <jsonlw/snapshot/types.hpp>

#include <cstdint>

namespace jsonlw::snapshot::detail::ref {

// A min-heap of at most k keys: heap[0] is the k-th best seen so far once the heap is full.
struct TopK {
    std::uint64_t heap[SnapshotConfig::max_k];
    int size = 0;
    int cap;
    std::uint64_t threshold = 0;  // every real key is > 0 (ids are < 2^32 - 1)

    explicit TopK(int k) noexcept : cap(k) {}

    // The value key a block's max must exceed for the block to be worth offering: a later
    // element with the threshold's value loses the tie to it. INT32_MIN while not full.
    std::int32_t gate() const noexcept
    {
        return static_cast<std::int32_t>(static_cast<std::uint32_t>(threshold >> 32) ^ 0x80000000u);
    }

    void offer(std::uint64_t key) noexcept
    {
        if (size < cap) {
            int i = size++;
            while (i > 0) {  // sift up
                const int parent = (i - 1) / 2;
                if (heap[parent] <= key) break;
                heap[i] = heap[parent];
                i = parent;
            }
            heap[i] = key;
            if (size == cap) threshold = heap[0];
            return;
        }
        int i = 0;  // replace the minimum, sift down
        for (;;) {
            int c = 2 * i + 1;
            if (c >= size) break;
            if (c + 1 < size && heap[c + 1] < heap[c]) ++c;
            if (heap[c] >= key) break;
            heap[i] = heap[c];
            i = c;
        }
        heap[i] = key;
        threshold = heap[0];
    }
};

}  // namespace jsonlw::snapshot::detail::ref
