// The stacks of one OS thread's fibers: one mapping, a PROT_NONE guard page below each stack
// (an overflowing GPU thread faults instead of writing into its neighbour). Owned by that OS
// thread (thread_local in grid.cpp); grows to the largest block it ran; never shrinks.
#pragma once

#include <cstddef>

namespace jsonlw::emu {

class FiberStacks {
public:
    static constexpr std::size_t stack_bytes = 64 * 1024;

    FiberStacks() = default;
    FiberStacks(const FiberStacks&) = delete;
    FiberStacks& operator=(const FiberStacks&) = delete;
    ~FiberStacks();

    // Makes room for n stacks (throws std::bad_alloc when the mapping fails).
    void reserve(int n);
    // The top (highest address, 16-byte aligned) of stack i < the reserved count.
    void* top(int i) const noexcept;
    // Whether addr lies in one of the guard pages (a GPU thread's stack overflowed).
    bool is_guard(const void* addr) const noexcept;

private:
    char* base_ = nullptr;
    std::size_t slot_bytes_ = 0;  // guard page + stack
    int count_ = 0;
};

}  // namespace jsonlw::emu
