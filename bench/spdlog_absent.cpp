// Built instead of spdlog_runs.cpp when Meson does not find spdlog: its baselines are skipped
// (and reported as skipped).
#include "runs.hpp"

namespace bench {

bool have_spdlog() noexcept { return false; }

ThroughputResult spdlog_throughput(const ThroughputSpec&, SpdlogMode)
{
    return {.problem = "spdlog not built in"};
}

SubmitCostResult spdlog_submit_cost(const SubmitCostSpec&, SpdlogMode)
{
    SubmitCostResult r;
    r.problem = "spdlog not built in";
    return r;
}

OverloadResult spdlog_overload(const OverloadSpec&, bool)
{
    OverloadResult r;
    r.problem[0] = 's';  // never run: the scenario skips spdlog variants without spdlog
    return r;
}

}  // namespace bench
