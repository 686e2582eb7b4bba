// Stand-in for CUDA's cuda_runtime.h on the emulated device: the runtime API
// (cuda_runtime_api.h), the device-side language (jsonlw_emu/device_builtins.hpp) and the
// launch macro (jsonlw_emu/launch.hpp). Test-only; see docs/emulated-device.md.
#pragma once

#include <cuda_runtime_api.h>
#include <jsonlw_emu/device_builtins.hpp>
#include <jsonlw_emu/launch.hpp>
