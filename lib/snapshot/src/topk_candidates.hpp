// The top-k of a row seen in id order, without a heap: logits above a gate go to a small
// buffer, and a full buffer is cut back to its k best, which raises the gate to the k-th best
// seen so far. Owned by one fast_row call (one thread); no allocation.
#pragma once

#include <jsonlw/snapshot/reference.hpp>  // order_key, key_id
#include <jsonlw/snapshot/types.hpp>

#include <cstdint>
#include <limits>

namespace jsonlw::snapshot::detail {

class TopCandidates {
public:
    static constexpr int capacity = 2 * SnapshotConfig::max_k;

    // A cut at twice k (at least 32 entries) keeps each cut cheap and raises the gate early: the
    // first block of a row offers ~100 logits rather than all of its 1024.
    explicit TopCandidates(int k) noexcept
        : k_(k), cut_at_(k * 2 < 32 ? 32 : k * 2 > capacity ? capacity : k * 2)
    {
    }

    // A logit must be above this to be offered. Offers come in increasing id order, so a later
    // logit equal to the k-th best so far loses the tie (order_key: ties to the smaller id) and
    // "above" is strict. Never NaN; -inf until the first cut, so -inf logits never enter.
    float gate() const noexcept { return gate_; }

    // x: a logit that is not NaN (the kernels give up on a NaN row before the end).
    void offer(std::int32_t id, float x) noexcept
    {
        if (!(x > gate_)) return;
        keys_[n_++] = order_key(x, id);
        if (n_ == cut_at_) cut();
    }

    // Sorts the buffer in the total order, keeps the first min(k, size) and returns how many.
    int finish() noexcept;
    std::int32_t id(int i) const noexcept { return key_id(keys_[i]); }

private:
    void cut() noexcept;

    std::uint64_t keys_[capacity];
    int n_ = 0;
    int k_;
    int cut_at_;
    float gate_ = -std::numeric_limits<float>::infinity();
};

}  // namespace jsonlw::snapshot::detail
