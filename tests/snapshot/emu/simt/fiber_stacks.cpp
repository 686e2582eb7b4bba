#include "fiber_stacks.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <new>

namespace jsonlw::emu {

namespace {
std::size_t page_bytes() noexcept
{
    static const std::size_t p = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    return p;
}
}  // namespace

FiberStacks::~FiberStacks()
{
    if (base_) ::munmap(base_, slot_bytes_ * std::size_t(count_));
}

void FiberStacks::reserve(int n)
{
    if (n <= count_) return;
    const std::size_t page = page_bytes();
    const std::size_t slot = page + stack_bytes;
    void* p = ::mmap(nullptr, slot * std::size_t(n), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    for (int i = 0; i < n; ++i) {
        if (::mprotect(static_cast<char*>(p) + slot * std::size_t(i), page, PROT_NONE) != 0) {
            ::munmap(p, slot * std::size_t(n));
            throw std::bad_alloc();
        }
    }
    if (base_) ::munmap(base_, slot_bytes_ * std::size_t(count_));
    base_ = static_cast<char*>(p);
    slot_bytes_ = slot;
    count_ = n;
}

void* FiberStacks::top(int i) const noexcept
{
    return base_ + slot_bytes_ * std::size_t(i + 1);
}

bool FiberStacks::is_guard(const void* addr) const noexcept
{
    const auto a = reinterpret_cast<std::uintptr_t>(addr);
    const auto b = reinterpret_cast<std::uintptr_t>(base_);
    if (!base_ || a < b || a >= b + slot_bytes_ * std::size_t(count_)) return false;
    return (a - b) % slot_bytes_ < page_bytes();
}

}  // namespace jsonlw::emu
