// TopCandidates' cut and finish: the rare steps, out of line (a cut happens a few dozen times
// per row of a typical vocabulary, most of them in its first block).
#include "topk_candidates.hpp"

#include "half_bits.hpp"

#include <algorithm>
#include <functional>

namespace jsonlw::snapshot::detail {
namespace {

// The value of an order_key's upper half (ordered_bits, reference.hpp) for a non-NaN logit.
float ordered_value(std::uint32_t o) noexcept
{
    return bits_f32((o & 0x80000000u) ? (o & 0x7fffffffu) : ~o);
}

}  // namespace

void TopCandidates::cut() noexcept
{
    std::nth_element(keys_, keys_ + (k_ - 1), keys_ + n_, std::greater<>{});
    n_ = k_;
    // Everything kept is at least the k-th best; with the whole buffer at the gate's value
    // (a row of equal logits) the gate stays where it is and nothing later enters.
    gate_ = ordered_value(static_cast<std::uint32_t>(keys_[k_ - 1] >> 32));
}

int TopCandidates::finish() noexcept
{
    std::sort(keys_, keys_ + n_, std::greater<>{});
    n_ = std::min(n_, k_);
    return n_;
}

}  // namespace jsonlw::snapshot::detail
