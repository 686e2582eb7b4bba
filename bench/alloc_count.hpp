// Heap allocations made by the calling thread: the bench replaces the global operator new
// (alloc_count.cpp) and counts each call in a thread_local counter.
#pragma once

#include <cstdint>

namespace bench {

// operator new calls (every form) made by this thread since it started.
std::uint64_t allocations_on_this_thread() noexcept;

}  // namespace bench
