// The CUDA vector types the kernels use (uint3, dim3, uint4), for the emulated device. Plain
// aggregates in the global namespace, laid out as CUDA's vector_types.h documents them (uint4
// 16-byte aligned, so a uint4 load is one aligned 16-byte access as on the GPU).
#pragma once

struct uint3 {
    unsigned int x, y, z;
};

struct dim3 {
    unsigned int x = 1, y = 1, z = 1;
    constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) noexcept
        : x(vx), y(vy), z(vz)
    {
    }
    constexpr dim3(uint3 v) noexcept : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const noexcept { return uint3{x, y, z}; }
};

struct alignas(16) uint4 {
    unsigned int x, y, z, w;
};

constexpr uint4 make_uint4(unsigned int x, unsigned int y, unsigned int z, unsigned int w) noexcept
{
    return uint4{x, y, z, w};
}
