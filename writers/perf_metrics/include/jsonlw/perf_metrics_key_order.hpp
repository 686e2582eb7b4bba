// KeyOrder<Key>: the order in which a record's producer set the keys of one of its maps.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>

namespace jsonlw {

// The keys of one map of a perf-metrics record (timing_metrics, a step, ...) in the order they
// arrived, each at most once: TensorRT-LLM's writer copies the dicts it was given and
// json.dumps keeps their insertion order, so a byte-identical line writes them in that order
// (tensorrt_llm/serve/perf_metrics.py, _jsonl_perf_metrics). `Key` is a scoped enum whose last
// enumerator is `count`. Fixed size, no allocation; a value type (copy it freely).
template <class Key>
class KeyOrder {
public:
    static constexpr std::size_t capacity = std::size_t(Key::count);
    static_assert(capacity <= 32, "one bit per key in seen_");

    constexpr KeyOrder() noexcept = default;
    constexpr KeyOrder(std::initializer_list<Key> keys) noexcept
    {
        for (Key k : keys) push_back(k);
    }

    // Appends `k`. A key already listed keeps its first place, as a dict's key does when it
    // is set again; a value outside the enum is ignored.
    constexpr void push_back(Key k) noexcept
    {
        const auto i = std::size_t(k);
        if (i >= capacity || contains(k)) return;
        seen_ |= std::uint32_t(1) << i;
        keys_[size_++] = k;
    }
    constexpr bool contains(Key k) const noexcept
    {
        const auto i = std::size_t(k);
        return i < capacity && ((seen_ >> i) & 1u) != 0;
    }
    constexpr bool empty() const noexcept { return size_ == 0; }
    constexpr std::size_t size() const noexcept { return size_; }
    constexpr const Key* begin() const noexcept { return keys_.data(); }
    constexpr const Key* end() const noexcept { return keys_.data() + size_; }
    constexpr void clear() noexcept { *this = KeyOrder(); }

    friend constexpr bool operator==(const KeyOrder&, const KeyOrder&) = default;

private:
    std::array<Key, capacity> keys_{};
    std::uint32_t seen_ = 0;
    std::uint8_t size_ = 0;
};

// Calls write(k) for every key of `given`, in its order, then for every key of `fallback`
// that `given` does not list, in the fallback's order: the line's order for a map whose
// producer's order is known for some keys (or none).
template <class Key, std::size_t N, class Write>
constexpr void for_each_in_order(const KeyOrder<Key>& given, const std::array<Key, N>& fallback,
                                 Write&& write)
{
    for (Key k : given) write(k);
    for (Key k : fallback)
        if (!given.contains(k)) write(k);
}

}  // namespace jsonlw
