// lib/snapshot/cuda/kernels.cu compiled by g++ for the emulated device: this TU only gives the
// .cu file a C++ compiler (meson picks the compiler by extension). The emulator's include
// directory comes first, so <cuda_runtime.h> and <cuda_fp16.h> are its stand-ins.
#include "../../../lib/snapshot/cuda/kernels.cu"
