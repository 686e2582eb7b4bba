// Pass 1 of reference_row (reference.cpp): one walk over the row that widens each logit once
// and does everything that needs only keys — NaN and +inf counts, the max, the count above the
// sampled logit, and the top-k through a TopK that only sees blocks whose max beats its k-th
// best. Templates over the lane count N and the dtype, instantiated by reference.cpp; any
// thread, with the caller's TopK and widening buffer.
#pragma once

#include "reference_keys.hpp"
#include "reference_lanes.hpp"
#include "reference_topk.hpp"

#include <jsonlw/snapshot/types.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

namespace jsonlw::snapshot::detail::ref {

// Rows are walked in blocks: the heap looks at a block only when the block's largest key beats
// the heap's current k-th best, which after the first few blocks of a typical row is almost
// never; NaN and +inf are counted only in blocks whose max says they hold one.
inline constexpr int block = 64;

struct KeyPass {
    std::uint32_t nans = 0, posinfs = 0, above = 0;
    std::int32_t max_key = std::numeric_limits<std::int32_t>::min();  // INT32_MIN: empty
};

template <LogitDType dtype>
void scalar_keys(const unsigned char* p, std::int32_t from, std::int32_t to, KeyPass& r) noexcept
{
    for (std::int32_t i = from; i < to; ++i) {
        const std::int32_t key = value_key(load1<dtype>(p, i));
        r.nans += key == key_nan;
        r.posinfs += key == key_posinf;
    }
}

template <LogitDType dtype>
void offer_range(const unsigned char* p, std::int32_t from, std::int32_t to, TopK& top) noexcept
{
    for (std::int32_t i = from; i < to; ++i) {
        const std::uint64_t key = heap_key(value_key(load1<dtype>(p, i)), i);
        if (key > top.threshold) top.offer(key);
    }
}

// Offers the block's elements whose value beats the heap's k-th best: a later element with
// an equal value loses the tie, so key > gate is exactly heap_key > threshold. The keys are
// recomputed, a chunk of N at a time, and only a chunk with such a lane is looked at lane by
// lane (in a typical block that is one chunk, if any).
template <int N, LogitDType dtype>
[[gnu::always_inline]] inline void offer_block(const unsigned char* p, std::int32_t base,
                                               TopK& top) noexcept
{
    using i32 = typename Lanes<N>::i32;
    for (int j = 0; j < block; j += N) {
        const i32 key = value_keys<N>(load_bits<N, dtype>(p, base + j));
        if (!any_lane<N>(key > top.gate())) continue;
        for (int l = 0; l < N; ++l)
            if (key[l] > top.gate()) top.offer(heap_key(key[l], base + j + l));
    }
}

// Pass 1. s_key/s_at: the sampled element's key and id (key_nan and 0 for an invalid id, so
// that nothing counts as above it). fp16/bf16 rows are also widened into `widened`.
template <int N, LogitDType dtype>
[[gnu::always_inline]] inline KeyPass key_pass(const unsigned char* p, std::int32_t vocab,
                                               std::int32_t s_key, std::int32_t s_at, TopK& top,
                                               float* widened) noexcept
{
    using i32 = typename Lanes<N>::i32;
    constexpr bool keep_widened = dtype != LogitDType::f32;
    constexpr std::int32_t lowest = std::numeric_limits<std::int32_t>::min();
    KeyPass r;
    i32 iota{};
    for (int l = 0; l < N; ++l) iota[l] = l;
    // key(i) > key(s): a larger value, or the same value at a smaller id. Before s that is
    // value key > s_key - 1, from s on value key > s_key (s_key - 1 cannot wrap: s_key >=
    // key_neginf).
    i32 above{}, row_max = i32{} + lowest;
    std::int32_t base = 0;
    for (; vocab - base >= block; base += block) {
        const bool mixed = base < s_at && s_at < base + block;
        const i32 block_thr = i32{} + (base + block <= s_at ? s_key - 1 : s_key);
        i32 block_max = i32{} + lowest;
        for (int j = 0; j < block; j += N) {
            const auto x = load_bits<N, dtype>(p, base + j);
            if constexpr (keep_widened) std::memcpy(widened + base + j, &x, sizeof x);
            const i32 key = value_keys<N>(x);
            block_max = vmax(block_max, key);
            const i32 thr = mixed ? s_key + ((iota + (base + j)) < s_at) : block_thr;
            above -= key > thr;  // a true lane is -1
        }
        const i32 gate = i32{} + std::min(top.gate(), key_posinf - 1);
        if (any_lane<N>(block_max > gate)) [[unlikely]] {
            if (any_lane<N>(block_max >= key_posinf)) scalar_keys<dtype>(p, base, base + block, r);
            if (any_lane<N>(block_max > top.gate())) offer_block<N, dtype>(p, base, top);
        }
        row_max = vmax(row_max, block_max);
    }
    for (int l = 0; l < N; ++l) {
        r.above += static_cast<std::uint32_t>(above[l]);
        r.max_key = std::max(r.max_key, row_max[l]);
    }
    for (std::int32_t i = base; i < vocab; ++i) {  // the tail, one element at a time
        const float x = load1<dtype>(p, i);
        if constexpr (keep_widened) widened[i] = x;
        const std::int32_t key = value_key(x);
        r.nans += key == key_nan;
        r.posinfs += key == key_posinf;
        r.max_key = std::max(r.max_key, key);
        r.above += key > s_key || (key == s_key && i < s_at);
    }
    offer_range<dtype>(p, base, vocab, top);
    return r;
}

}  // namespace jsonlw::snapshot::detail::ref
