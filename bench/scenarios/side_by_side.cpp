// The progress line every run prints on stderr, timed from the bench's start.
#include "side_by_side.hpp"

#include "clock.hpp"

namespace bench {

namespace {
const SteadyClock::time_point g_start = SteadyClock::now();
}  // namespace

void progress(const std::string& text)
{
    fmt::print(stderr, "[{:5.0f} s] {}\n", seconds_since(g_start), text);
}

}  // namespace bench
