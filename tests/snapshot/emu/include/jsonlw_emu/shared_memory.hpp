// `__shared__` variables the emulated device can see. kernels.cu declares its shared memory as
// JSONLW_SHARED(type, name, count) and JSONLW_SHARED_SCALAR(type, name); nvcc expands them to
// the plain `__shared__` declarations (kernels.cu defines them when this header did not), the
// emulated device to a per-OS-thread (so per-block) SharedArray / SharedScalar whose element
// proxies report every read, write and atomic to the racecheck and bank-conflict accounting
// (simt/shared_check.hpp, jsonlw_emu/shared_report.hpp). Used only inside kernels, on the fiber
// that runs the calling GPU thread; each variable belongs to the OS thread that declared it.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <source_location>
#include <type_traits>

namespace jsonlw::emu {

enum class SharedAccessKind : std::uint8_t { read, write, atomic };

struct SharedShadow;  // simt/shared_check.cpp: per-element access records and site table

// What the checker knows of one `__shared__` variable of one OS thread.
struct SharedVarInfo {
    const char* name;
    const char* function;  // the kernel that declares it (std::source_location::function_name)
    std::uint32_t elem_size;
    std::uint32_t count;
    SharedShadow* shadow = nullptr;  // made on the first access

    SharedVarInfo(const char* n, const char* f, std::uint32_t es, std::uint32_t c) noexcept
        : name(n), function(f), elem_size(es), count(c)
    {
    }
    SharedVarInfo(const SharedVarInfo&) = delete;
    SharedVarInfo& operator=(const SharedVarInfo&) = delete;
    ~SharedVarInfo();
};

// One lane's access of element `index` of `var` from source site `where` (a no-op outside a
// kernel). An index past the end fails the launch (memcheck); a hazard fails it (racecheck).
void record_shared_access(SharedVarInfo& var, std::size_t index, SharedAccessKind kind,
                          const std::source_location& where);

// An array index that remembers where it was written: operator[] cannot take a defaulted
// std::source_location, a converting constructor can.
struct SharedIndex {
    std::size_t i;
    std::source_location where;
    template <std::integral I>
    SharedIndex(I index, std::source_location w = std::source_location::current()) noexcept
        : i(static_cast<std::size_t>(index)), where(w)
    {
    }
};

// The address of a shared element, for the atomics (atomicAdd(&s_count, 1)).
template <class T>
struct SharedPtr {
    SharedVarInfo* var;
    T* p;
    std::size_t index;
};

// One element of a shared variable: converting it reads, assigning to it writes.
template <class T>
class SharedRef {
public:
    SharedRef(SharedVarInfo& var, T& v, std::size_t index, std::source_location where) noexcept
        : var_(var), v_(v), index_(index), where_(where)
    {
    }
    operator T() const
    {
        record_shared_access(var_, index_, SharedAccessKind::read, where_);
        return v_;
    }
    const SharedRef& operator=(T x) const
    {
        record_shared_access(var_, index_, SharedAccessKind::write, where_);
        v_ = x;
        return *this;
    }
    const SharedRef& operator=(const SharedRef& o) const { return *this = static_cast<T>(o); }
    SharedPtr<T> operator&() const noexcept { return {&var_, &v_, index_}; }

private:
    SharedVarInfo& var_;
    T& v_;
    std::size_t index_;
    std::source_location where_;
};

template <class T, std::size_t N>
class SharedArray {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 16, "a shared element is a word or a vector");

public:
    explicit SharedArray(const char* name, std::source_location decl = std::source_location::current()) noexcept
        : info_(name, decl.function_name(), sizeof(T), N)
    {
    }
    SharedRef<T> operator[](SharedIndex i) noexcept { return SharedRef<T>(info_, data_[i.i < N ? i.i : 0], i.i, i.where); }
    static constexpr std::size_t size() noexcept { return N; }

private:
    T data_[N];
    SharedVarInfo info_;
};

// A scalar `__shared__`: reads and writes carry no source line (operators cannot take one).
template <class T>
class SharedScalar {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 16, "a shared element is a word or a vector");

public:
    explicit SharedScalar(const char* name, std::source_location decl = std::source_location::current()) noexcept
        : info_(name, decl.function_name(), sizeof(T), 1)
    {
    }
    operator T() { return ref(); }
    SharedScalar& operator=(T x)
    {
        ref() = x;
        return *this;
    }
    SharedPtr<T> operator&() noexcept { return {&info_, &v_, 0}; }

private:
    SharedRef<T> ref() noexcept { return SharedRef<T>(info_, v_, 0, std::source_location()); }
    T v_;
    SharedVarInfo info_;
};

}  // namespace jsonlw::emu

#define JSONLW_SHARED(type, name, count) static thread_local ::jsonlw::emu::SharedArray<type, (count)> name(#name)
#define JSONLW_SHARED_SCALAR(type, name) static thread_local ::jsonlw::emu::SharedScalar<type> name(#name)
