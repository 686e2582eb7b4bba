// Stand-in for CUDA's cuda_fp16.h on the emulated device: the __half storage type and the
// conversions the kernels use. __half2float is exact for every fp16 value (the hardware's
// cvt.f32.f16); it is computed here with the compiler's _Float16, independently of jsonlw's own
// integer conversion (lib/snapshot/src/half_bits.hpp), so the emulator does not share its bugs.
#pragma once

#include <cstdint>
#include <cstring>

struct __half {
    unsigned short x;
};

inline __half __ushort_as_half(unsigned short bits) noexcept { return __half{bits}; }
inline unsigned short __half_as_ushort(__half h) noexcept { return h.x; }

inline float __half2float(__half h) noexcept
{
    _Float16 f;
    std::memcpy(&f, &h.x, 2);
    return static_cast<float>(f);
}
