// memcheck for the emulated device: device allocations have PROT_NONE guard pages
// (runtime/device_memory.cpp), so a kernel's access outside its allocation faults; this trap
// turns that SIGSEGV/SIGBUS, taken while a block runs, into a jump back to the grid runner
// with the faulting address, which reports it as compute-sanitizer's memcheck would and fails
// the launch with cudaErrorIllegalAddress. Faults outside a kernel go to the handler that was
// installed before (Catch2's, the default). Used by the grid runner's OS threads.
#pragma once

#include <csetjmp>
#include <string>

namespace jsonlw::emu {

class FiberStacks;
struct ThreadState;

struct FaultTrap {
    // Installs the handler if another one replaced it, and an alternate signal stack on this
    // thread (a GPU thread that overflows its fiber stack faults with no stack left).
    static void arm_this_thread();
    // While set, a fault on this thread jumps to *jump (sigsetjmp with savemask = 1).
    static void set_jump(sigjmp_buf* jump) noexcept;
    // The address and kind of the fault that jumped.
    static const void* fault_address() noexcept;
    static bool fault_was_write() noexcept;
    // A general-protection fault (a misaligned 16-byte access), reported as cudaErrorMisalignedAddress.
    static bool fault_was_misaligned() noexcept;
    // The memcheck report for that fault, made by GPU thread `who` (may be null).
    static std::string describe(const ThreadState* who, const FiberStacks& stacks);
};

}  // namespace jsonlw::emu
