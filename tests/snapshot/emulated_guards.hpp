// RAII undo of every fault an emulated test injects (tests/snapshot/emu/include/jsonlw_emu/
// faults.hpp), so a failed REQUIRE in the middle of a case leaves no stalled stream, closed
// gate or broken device behind for the stage's destructor or the next case.
#pragma once

#include <jsonlw_emu/faults.hpp>
#include <jsonlw_emu/simt.hpp>

#include <cstdint>
#include <utility>

namespace gpu_test {

// Restores the emulated device (faults, sticky error, stalls, counts) and the schedule seed
// of this run ($JSONLW_EMU_SEED) when the case ends, however it ends.
struct DeviceReset {
    std::uint64_t seed = jsonlw::emu::schedule_seed();
    DeviceReset() = default;
    DeviceReset(const DeviceReset&) = delete;
    DeviceReset& operator=(const DeviceReset&) = delete;
    ~DeviceReset()
    {
        jsonlw::emu::reset_device();
        jsonlw::emu::set_schedule_seed(seed);
    }
};

// Stops stalling new streams and releases every stalled one when it goes out of scope.
// Declared after the stage it protects, so it runs first: the stage's destructor then finds
// its stream running, whatever REQUIRE failed on the way.
struct StallsReleased {
    StallsReleased() = default;
    StallsReleased(const StallsReleased&) = delete;
    StallsReleased& operator=(const StallsReleased&) = delete;
    ~StallsReleased()
    {
        jsonlw::emu::stall_new_streams(false);
        jsonlw::emu::release_all_streams();
    }
};

// Runs a callable when it goes out of scope (a gate to open, a buffer to free).
template <class F>
class ScopeExit {
public:
    explicit ScopeExit(F f) : f_(std::move(f)) {}
    ScopeExit(const ScopeExit&) = delete;
    ScopeExit& operator=(const ScopeExit&) = delete;
    ~ScopeExit() { f_(); }

private:
    F f_;
};

}  // namespace gpu_test
