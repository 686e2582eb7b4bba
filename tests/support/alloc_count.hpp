// Heap allocations counted per thread, for the bench and the tests that assert on them: linking
// alloc_count_dep (tests/support/meson.build) replaces the global operator new and delete
// (alloc_count.cpp) with malloc/free plus a thread_local count. One counter for every user;
// none may replace operator new on its own.
#pragma once

#include <cstdint>

namespace jsonlw_test {

// operator new calls (every form) made by this thread since it started.
std::uint64_t allocations_on_this_thread() noexcept;

// While on, counts the frees made by a thread named `thread_name` (PR_GET_NAME: at most 15
// characters, e.g. "jsonlw:raw" for a writer's I/O thread) of blocks that another thread
// allocated. Turn it on only once that thread has its name; a name it had when first checked
// is kept. `thread_name` must outlive the counting (a string literal).
void count_foreign_frees_on(const char* thread_name) noexcept;
void stop_counting_foreign_frees() noexcept;
std::uint64_t foreign_frees() noexcept;

}  // namespace jsonlw_test
