// The global operator new/delete of whatever links alloc_count_dep (alloc_count.hpp): malloc and
// free, a per-thread count of the calls, and in front of each block the address of its
// allocating thread's tag, so a free can tell whose block it is.
#include "alloc_count.hpp"

#include <sys/prctl.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

namespace {

thread_local std::uint64_t t_allocations = 0;
thread_local char t_tag;  // its address tells the threads apart
std::atomic<const char*> g_watched_name{nullptr};  // counting foreign frees while set
std::atomic<std::uint64_t> g_foreign_frees{0};
thread_local const char* t_checked_name = nullptr;  // the name this thread was compared with
thread_local bool t_is_watched = false;

// Each block carries, just before the pointer returned, the address of its allocating thread's
// t_tag, and in the word before that the offset back to what malloc returned.
void* counted(std::size_t n, std::size_t align = 0)
{
    ++t_allocations;
    const std::size_t header = std::max<std::size_t>(16, align);
    void* base = align == 0 ? std::malloc(n + header)
                            : std::aligned_alloc(align, (n + header + align - 1) / align * align);
    if (!base) return nullptr;
    char* p = static_cast<char*>(base) + header;
    reinterpret_cast<const void**>(p)[-1] = &t_tag;
    reinterpret_cast<std::size_t*>(p)[-2] = header;
    return p;
}

void* counted_or_throw(std::size_t n, std::size_t align = 0)
{
    if (void* p = counted(n, align)) return p;
    throw std::bad_alloc();
}

bool this_thread_is(const char* name) noexcept
{
    if (t_checked_name != name) {
        char mine[17] = {};
        ::prctl(PR_GET_NAME, mine);
        t_is_watched = std::strcmp(mine, name) == 0;
        t_checked_name = name;
    }
    return t_is_watched;
}

void counted_free(void* p) noexcept
{
    if (!p) return;
    const void* owner = static_cast<const void**>(p)[-1];
    const std::size_t header = static_cast<std::size_t*>(p)[-2];
    if (owner != &t_tag) {
        const char* watched = g_watched_name.load(std::memory_order_relaxed);
        if (watched && this_thread_is(watched))
            g_foreign_frees.fetch_add(1, std::memory_order_relaxed);
    }
    std::free(static_cast<char*>(p) - header);
}

}  // namespace

namespace jsonlw_test {

std::uint64_t allocations_on_this_thread() noexcept { return t_allocations; }

void count_foreign_frees_on(const char* thread_name) noexcept
{
    g_watched_name.store(thread_name, std::memory_order_relaxed);
}

void stop_counting_foreign_frees() noexcept
{
    g_watched_name.store(nullptr, std::memory_order_relaxed);
}

std::uint64_t foreign_frees() noexcept { return g_foreign_frees.load(std::memory_order_relaxed); }

}  // namespace jsonlw_test

void* operator new(std::size_t n) { return counted_or_throw(n); }
void* operator new[](std::size_t n) { return counted_or_throw(n); }
void* operator new(std::size_t n, std::align_val_t a) { return counted_or_throw(n, std::size_t(a)); }
void* operator new[](std::size_t n, std::align_val_t a)
{
    return counted_or_throw(n, std::size_t(a));
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted(n); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept
{
    return counted(n, std::size_t(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept
{
    return counted(n, std::size_t(a));
}

void operator delete(void* p) noexcept { counted_free(p); }
void operator delete[](void* p) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t) noexcept { counted_free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { counted_free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { counted_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { counted_free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { counted_free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept
{
    counted_free(p);
}
