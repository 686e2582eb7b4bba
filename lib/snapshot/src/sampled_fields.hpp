// The sampled id's fields of a TokenSnapshot as reference_row defines them (docs/snapshot.md):
// its logit, its logprob x - lse (in double, rounded once), its 1-based rank — or NaN, NaN, 0
// and invalid_sampled_id for an id outside the row. Shared by reference_row and fast_row so
// that the two can never disagree on them; any thread.
#pragma once

#include <jsonlw/snapshot/types.hpp>

#include <cmath>
#include <cstdint>
#include <limits>

namespace jsonlw::snapshot::detail {

inline float logprob_of(float x, double lse) noexcept
{
    return static_cast<float>(static_cast<double>(x) - lse);
}

// Sets out's sampled_* fields; returns the status flags they raise.
inline std::uint16_t fill_sampled(TokenSnapshot& out, std::int32_t sampled_id, bool valid,
                                  float x, std::uint64_t above, double lse) noexcept
{
    constexpr float qnan = std::numeric_limits<float>::quiet_NaN();
    std::uint16_t status = 0;
    out.sampled_id = sampled_id;
    if (valid) {
        out.sampled_logit = x;
        out.sampled_logprob = logprob_of(x, lse);
        out.sampled_rank = static_cast<std::uint32_t>(above + 1);
    } else {
        out.sampled_logit = qnan;
        out.sampled_logprob = qnan;
        out.sampled_rank = 0;
        status |= flags::invalid_sampled_id;
    }
    if (!std::isfinite(out.sampled_logprob)) status |= flags::sampled_nonfinite;
    return status;
}

}  // namespace jsonlw::snapshot::detail
