// The executor's side of jsonlw_emu/traffic.hpp: a block's global accesses are recorded on the
// OS thread that runs it (record_global_access, from its fibers), grouped into warp-wide
// instructions when the block ends, and folded into its launch's LaunchRecorder; run_grid
// publishes the launch when every block is done. begin_block/end_block run on the block's OS
// thread, publish on the launching thread after the blocks; end_block may run on several OS
// threads at once.
#pragma once

#include <jsonlw_emu/traffic.hpp>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace jsonlw::emu {

class LaunchRecorder {
public:
    // A half-open byte range [first, second) of absolute addresses.
    using Range = std::pair<std::uintptr_t, std::uintptr_t>;

    // This OS thread is about to run a block of `threads` GPU threads: record its accesses.
    static void begin_block(int threads);
    // The block on this OS thread ended (or faulted): group its accesses into instructions and
    // add them to this launch. Stops recording on this OS thread.
    void end_block();
    // Every block has ended: the launch's record joins what take_launch_traffic() returns.
    void publish(std::string kernel, dim3 grid, dim3 block, bool failed, std::uint64_t collectives);

private:
    std::mutex m_;
    std::map<std::uintptr_t, BufferTraffic> buffers_;  // by base (0: memory of no allocation)
    std::vector<Range> reads_, writes_;                 // coalesced per block
};

}  // namespace jsonlw::emu
