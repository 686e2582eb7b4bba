// TopCandidates' cut and finish: the rare steps, out of line (a cut happens about ten times per
// row of a typical vocabulary, half of them in its first block). The AVX2 and AVX-512 kernels
// cut with their own branch-free rank count instead (fast_row_avx512.cpp says why).
#include "topk_candidates.hpp"

#include <algorithm>
#include <functional>

namespace jsonlw::snapshot::detail {
void TopCandidates::cut() noexcept
{
    std::nth_element(keys_, keys_ + (k_ - 1), keys_ + n_, std::greater<>{});
    // Everything kept is at least the k-th best; with the whole buffer at the gate's value
    // (a row of equal logits) the gate stays where it is and nothing later enters.
    kept(keys_[k_ - 1]);
}

int TopCandidates::finish() noexcept
{
    std::sort(keys_, keys_ + n_, std::greater<>{});
    n_ = std::min(n_, k_);
    return n_;
}

}  // namespace jsonlw::snapshot::detail
