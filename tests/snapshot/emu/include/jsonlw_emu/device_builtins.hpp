// CUDA's device-side language, for kernels compiled by g++ against the emulated device: the
// execution-space qualifiers, the built-in index variables, __shared__, __syncthreads and the
// intrinsics the snapshot kernels use, with CUDA's semantics for 32-lane warps (CUDA C++
// Programming Guide, "Warp Shuffle Functions", "Warp Vote Functions", "Synchronization
// Functions"). Each GPU thread is a fiber of the SIMT executor (jsonlw_emu/simt.hpp); a block's
// fibers share one OS thread, so `__shared__` is per OS thread, which is per block.
#pragma once

#include <jsonlw_emu/global_access.hpp>
#include <jsonlw_emu/shared_memory.hpp>
#include <jsonlw_emu/simt.hpp>
#include <jsonlw_emu/vector_types.hpp>

#include <math.h>  // expf, logf, fmaxf, fmaf, isfinite, INFINITY in the global namespace

#include <cstdint>
#include <cstring>
#include <source_location>
#include <type_traits>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static thread_local
#define __restrict__ __restrict

#define threadIdx (::jsonlw::emu::t_current->thread_idx)
#define blockIdx (::jsonlw::emu::t_current->block_idx)
#define blockDim (::jsonlw::emu::t_current->block_dim)
#define gridDim (::jsonlw::emu::t_current->grid_dim)
inline constexpr int warpSize = 32;

inline void __syncthreads(std::source_location where = std::source_location::current())
{
    ::jsonlw::emu::block_barrier(where);
}

namespace jsonlw::emu::detail {
template <class T>
std::uint64_t to_bits(T v) noexcept
{
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>);
    std::uint64_t u = 0;
    std::memcpy(&u, &v, sizeof(T));
    return u;
}
template <class T>
T from_bits(std::uint64_t u) noexcept
{
    T v;
    std::memcpy(&v, &u, sizeof(T));
    return v;
}
template <class T>
T shuffle(Collective kind, unsigned mask, T v, int arg, int width, std::source_location where)
{
    return from_bits<T>(warp_collective(kind, mask, to_bits(v), arg, width, where));
}
}  // namespace jsonlw::emu::detail

template <class T>
T __shfl_sync(unsigned mask, T v, int src_lane, int width = warpSize,
              std::source_location where = std::source_location::current())
{
    return ::jsonlw::emu::detail::shuffle(::jsonlw::emu::Collective::shfl_idx, mask, v, src_lane, width, where);
}
template <class T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = warpSize,
                 std::source_location where = std::source_location::current())
{
    return ::jsonlw::emu::detail::shuffle(::jsonlw::emu::Collective::shfl_up, mask, v, int(delta), width, where);
}
template <class T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = warpSize,
                   std::source_location where = std::source_location::current())
{
    return ::jsonlw::emu::detail::shuffle(::jsonlw::emu::Collective::shfl_down, mask, v, int(delta), width, where);
}
template <class T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = warpSize,
                  std::source_location where = std::source_location::current())
{
    return ::jsonlw::emu::detail::shuffle(::jsonlw::emu::Collective::shfl_xor, mask, v, lane_mask, width, where);
}
// Orders the named lanes' shared-memory accesses (racecheck) and waits for them, as a collective.
inline void __syncwarp(unsigned mask = 0xffffffffu, std::source_location where = std::source_location::current())
{
    (void)::jsonlw::emu::warp_collective(::jsonlw::emu::Collective::syncwarp, mask, 0, 0, warpSize, where);
}
inline unsigned __ballot_sync(unsigned mask, int pred,
                              std::source_location where = std::source_location::current())
{
    return static_cast<unsigned>(
        ::jsonlw::emu::warp_collective(::jsonlw::emu::Collective::ballot, mask, pred != 0, 0, warpSize, where));
}
inline int __any_sync(unsigned mask, int pred, std::source_location where = std::source_location::current())
{
    return static_cast<int>(
        ::jsonlw::emu::warp_collective(::jsonlw::emu::Collective::any, mask, pred != 0, 0, warpSize, where));
}
inline int __all_sync(unsigned mask, int pred, std::source_location where = std::source_location::current())
{
    return static_cast<int>(
        ::jsonlw::emu::warp_collective(::jsonlw::emu::Collective::all, mask, pred != 0, 0, warpSize, where));
}

inline int __popc(unsigned x) noexcept { return __builtin_popcount(x); }
inline int __ffs(int x) noexcept { return __builtin_ffs(x); }  // 1 + the lowest set bit, 0 for 0
inline int __popcll(unsigned long long x) noexcept { return __builtin_popcountll(x); }
inline float __uint_as_float(unsigned x) noexcept { return ::jsonlw::emu::detail::from_bits<float>(x); }
inline unsigned __float_as_uint(float x) noexcept { return static_cast<unsigned>(::jsonlw::emu::detail::to_bits(x)); }
inline float __int_as_float(int x) noexcept { return __uint_as_float(static_cast<unsigned>(x)); }
inline int __float_as_int(float x) noexcept { return static_cast<int>(__float_as_uint(x)); }

// Streaming load ("cache streaming", evict first): on the CPU a plain load, after the
// alignment check a GPU's vector load makes (x86 would load a misaligned uint4 silently).
namespace jsonlw::emu {
// Bytes read through __ldcs, over the process's life (jsonlw_emu/launch_count.hpp).
void count_streaming_load(std::uint64_t bytes) noexcept;
}  // namespace jsonlw::emu
template <class T>
T __ldcs(const T* p, std::source_location where = std::source_location::current())
{
    if (reinterpret_cast<std::uintptr_t>(p) % alignof(T) != 0) ::jsonlw::emu::misaligned_access(p, alignof(T), where);
    ::jsonlw::emu::count_streaming_load(sizeof(T));
    ::jsonlw::emu::record_global_access(p, sizeof(T), false, where);
    return *p;
}
template <class T>
T __ldg(const T* p, std::source_location where = std::source_location::current())
{
    if (reinterpret_cast<std::uintptr_t>(p) % alignof(T) != 0) ::jsonlw::emu::misaligned_access(p, alignof(T), where);
    return *p;
}

// Atomics. A block's threads share one OS thread and switch only at scheduling points, so a
// shared-memory atomic is one uninterrupted read-modify-write; blocks on other OS threads may
// touch global memory at once, so the operation is a real atomic too. The scheduling point
// before it lets another thread win the race under a nonzero seed (docs/snapshot.md).
namespace jsonlw::emu::detail {

// A compare-and-swap loop: stores next(old) while go_on(old), until a swap lands or go_on
// says stop; returns the value before.
template <class T, class GoOn, class Next>
T cas_loop(T* p, GoOn go_on, Next next) noexcept
{
    T old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    while (go_on(old) &&
           !__atomic_compare_exchange_n(p, &old, next(old), false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    }
    return old;
}

}  // namespace jsonlw::emu::detail

template <class T>
T atomicAdd(T* p, T v) noexcept
{
    static_assert(std::is_integral_v<T> || std::is_floating_point_v<T>);
    ::jsonlw::emu::scheduling_point();
    if constexpr (std::is_integral_v<T>) return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
    else return ::jsonlw::emu::detail::cas_loop(p, [](T) { return true; }, [v](T old) { return old + v; });
}
template <class T>
T atomicMax(T* p, T v) noexcept
{
    ::jsonlw::emu::scheduling_point();
    return ::jsonlw::emu::detail::cas_loop(p, [v](T old) { return old < v; }, [v](T) { return v; });
}
template <class T>
T atomicMin(T* p, T v) noexcept
{
    ::jsonlw::emu::scheduling_point();
    return ::jsonlw::emu::detail::cas_loop(p, [v](T old) { return v < old; }, [v](T) { return v; });
}

// Shared-memory atomics through JSONLW_SHARED variables: one uninterrupted read-modify-write
// (the block's threads share an OS thread), recorded for racecheck as an atomic access.
namespace jsonlw::emu::detail {
// One shared-memory read-modify-write: stores next(old), returns old.
template <class T, class Next>
T shared_atomic(SharedPtr<T> p, const std::source_location& where, Next next)
{
    scheduling_point();
    record_shared_access(*p.var, p.index, SharedAccessKind::atomic, where);
    const T old = *p.p;
    *p.p = next(old);
    return old;
}
}  // namespace jsonlw::emu::detail
template <class T>
T atomicAdd(::jsonlw::emu::SharedPtr<T> p, std::type_identity_t<T> v,
            std::source_location where = std::source_location::current())
{
    return ::jsonlw::emu::detail::shared_atomic(p, where, [v](T old) { return T(old + v); });
}
template <class T>
T atomicMax(::jsonlw::emu::SharedPtr<T> p, std::type_identity_t<T> v,
            std::source_location where = std::source_location::current())
{
    return ::jsonlw::emu::detail::shared_atomic(p, where, [v](T old) { return old < v ? v : old; });
}
template <class T>
T atomicMin(::jsonlw::emu::SharedPtr<T> p, std::type_identity_t<T> v,
            std::source_location where = std::source_location::current())
{
    return ::jsonlw::emu::detail::shared_atomic(p, where, [v](T old) { return v < old ? v : old; });
}

// The integer min/max overloads CUDA's device headers declare.
inline int min(int a, int b) noexcept { return a < b ? a : b; }
inline int max(int a, int b) noexcept { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) noexcept { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) noexcept { return a > b ? a : b; }
inline long long min(long long a, long long b) noexcept { return a < b ? a : b; }
inline long long max(long long a, long long b) noexcept { return a > b ? a : b; }
inline unsigned long long min(unsigned long long a, unsigned long long b) noexcept { return a < b ? a : b; }
inline unsigned long long max(unsigned long long a, unsigned long long b) noexcept { return a > b ? a : b; }
inline unsigned long min(unsigned long a, unsigned long b) noexcept { return a < b ? a : b; }
inline unsigned long max(unsigned long a, unsigned long b) noexcept { return a > b ? a : b; }
