// The top-k of a row seen in id order, without a heap: logits above a gate go to a small
// buffer, and a full buffer is cut back to its k best, which raises the gate to the k-th best
// seen so far. Owned by one fast_row call (one thread); no allocation.
#pragma once

#include <jsonlw/snapshot/reference.hpp>  // order_key, key_id
#include <jsonlw/snapshot/types.hpp>

#include <cstdint>
#include <cstring>
#include <limits>

namespace jsonlw::snapshot::detail {

class TopCandidates {
public:
    static constexpr int capacity = 2 * SnapshotConfig::max_k;
    // Room past `capacity` for a kernel that appends a whole vector's offers at once (append()):
    // the buffer is cut when it reaches cut_at, so it never holds more than capacity + slack - 1.
    static constexpr int slack = 16;

    // A cut at twice k (at least 32 entries) keeps each cut cheap and raises the gate early: the
    // first block of a row offers ~100 logits rather than all of its 1024.
    explicit TopCandidates(int k) noexcept
        : k_(k), cut_at_(k * 2 < 32 ? 32 : k * 2 > capacity ? capacity : k * 2)
    {
    }

    // A logit must be above this to be offered. Offers come in increasing id order, so a later
    // logit equal to the k-th best so far loses the tie (order_key: ties to the smaller id) and
    // "above" is strict. Never NaN; -inf until the first cut (or seed_gate), so -inf logits
    // never enter.
    float gate() const noexcept { return gate_; }

    // x: a logit that is not NaN (the kernels give up on a NaN row before the end). True when
    // the buffer is full: the caller cuts it (cut(), or a kernel's own) before the next offer.
    [[nodiscard]] bool offer(std::int32_t id, float x) noexcept
    {
        if (!(x > gate_)) return false;
        keys_[n_++] = order_key(x, id);
        return n_ == cut_at_;
    }

    // For a kernel that offers a vector at a time: it writes up to `slack` keys (order_key) of
    // logits above gate() at append_at(), then says how many with append(); true when the
    // buffer is full: the caller cuts it before the next append. Offers come in id order
    // between two cuts as for offer(), but a vector's are all tested against the same gate.
    std::uint64_t* append_at() noexcept { return keys_ + n_; }
    [[nodiscard]] bool append(int count) noexcept
    {
        n_ += count;
        return n_ >= cut_at_;
    }

    // Raises the gate to g (never lowers it) before any offer. g must be below the row's k-th
    // largest logit (strictly: a logit equal to the gate is not offered), e.g. just below a
    // value that at least k distinct logits of the row reach; then every logit of the top k is
    // still offered and the result is the same, with fewer offers and cuts.
    void seed_gate(float g) noexcept { gate_ = g > gate_ ? g : gate_; }

    // Keeps the k best (std::nth_element) and raises the gate to the k-th.
    void cut() noexcept;
    // For a kernel's own cut: the buffer, and what it kept (the k best in keys()[0, k) and
    // the k-th best's key).
    std::uint64_t* keys() noexcept { return keys_; }
    int size() const noexcept { return n_; }
    int k() const noexcept { return k_; }
    void kept(std::uint64_t kth) noexcept
    {
        n_ = k_;
        gate_ = ordered_value(static_cast<std::uint32_t>(kth >> 32));
    }

    // Sorts the buffer in the total order, keeps the first min(k, size) and returns how many.
    int finish() noexcept;
    std::int32_t id(int i) const noexcept { return key_id(keys_[i]); }

    // The value of an order_key's upper half (ordered_bits, reference.hpp) for a non-NaN logit.
    static float ordered_value(std::uint32_t o) noexcept
    {
        const std::uint32_t u = (o & 0x80000000u) ? (o & 0x7fffffffu) : ~o;
        float f;
        std::memcpy(&f, &u, sizeof f);
        return f;
    }

private:

    std::uint64_t keys_[capacity + slack];
    int n_ = 0;
    int k_;
    int cut_at_;
    float gate_ = -std::numeric_limits<float>::infinity();
};

}  // namespace jsonlw::snapshot::detail
