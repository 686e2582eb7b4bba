// Global-memory accesses the emulated device can see: kernels.cu reads and writes global memory
// through __ldcs (streaming vector loads), ld_global and st_global; nvcc compiles the last two
// to the plain access (kernels.cu defines them when JSONLW_GLOBAL_ACCESSORS is not defined),
// the emulated device records each one for jsonlw_emu/traffic.hpp. Called only from a kernel,
// on the fiber that runs the calling GPU thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <source_location>
#include <type_traits>

namespace jsonlw::emu {

// One lane's access of `bytes` at p from the source site `where` (a no-op outside a kernel).
void record_global_access(const void* p, std::size_t bytes, bool store, const std::source_location& where) noexcept;

}  // namespace jsonlw::emu

#define JSONLW_GLOBAL_ACCESSORS 1

template <class T>
T ld_global(const T* p, std::source_location where = std::source_location::current())
{
    ::jsonlw::emu::record_global_access(p, sizeof(T), false, where);
    return *p;
}
// The lanes without `pred` take part in the warp-wide instruction too (a predicated load on a
// GPU): they are recorded as passing it without touching memory, so the lanes that load are
// grouped into the same instruction however many times each skipped it.
template <class T>
T ld_global_if(bool pred, const T* p, std::source_location where = std::source_location::current())
{
    ::jsonlw::emu::record_global_access(pred ? p : nullptr, pred ? sizeof(T) : 0, false, where);
    return pred ? *p : T{};
}
template <class T>
void st_global(T* p, std::type_identity_t<T> v, std::source_location where = std::source_location::current())
{
    ::jsonlw::emu::record_global_access(p, sizeof(T), true, where);
    *p = v;
}
