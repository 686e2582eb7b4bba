// Error names and descriptions, and the calling thread's last error (CUDA runtime API docs,
// "Error Handling": every failing call records its error; cudaGetLastError returns and resets
// it, cudaPeekAtLastError only returns it; a sticky error is returned by both until reset).
#include "device_state.hpp"

#include <jsonlw_emu/runtime_hooks.hpp>

namespace jsonlw::emu::detail {
namespace {

thread_local cudaError_t last_error = cudaSuccess;
thread_local bool host_func_running = false;

struct ErrorText {
    cudaError_t code;
    const char* name;
    const char* text;
};

#define JSONLW_EMU_ERROR(code, text) {code, #code, text}
constexpr ErrorText error_texts[] = {
    JSONLW_EMU_ERROR(cudaSuccess, "no error"),
    JSONLW_EMU_ERROR(cudaErrorInvalidValue, "invalid argument"),
    JSONLW_EMU_ERROR(cudaErrorMemoryAllocation, "out of memory"),
    JSONLW_EMU_ERROR(cudaErrorInitializationError, "initialization error"),
    JSONLW_EMU_ERROR(cudaErrorCudartUnloading, "driver shutting down"),
    JSONLW_EMU_ERROR(cudaErrorInvalidConfiguration, "invalid configuration argument"),
    JSONLW_EMU_ERROR(cudaErrorInvalidPitchValue, "invalid pitch argument"),
    JSONLW_EMU_ERROR(cudaErrorInvalidDevicePointer, "invalid device pointer"),
    JSONLW_EMU_ERROR(cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy"),
    JSONLW_EMU_ERROR(cudaErrorInvalidDeviceFunction, "invalid device function"),
    JSONLW_EMU_ERROR(cudaErrorNoDevice, "no CUDA-capable device is detected"),
    JSONLW_EMU_ERROR(cudaErrorInvalidDevice, "invalid device ordinal"),
    JSONLW_EMU_ERROR(cudaErrorInvalidResourceHandle, "invalid resource handle"),
    JSONLW_EMU_ERROR(cudaErrorNotReady, "device not ready"),
    JSONLW_EMU_ERROR(cudaErrorIllegalAddress, "an illegal memory access was encountered"),
    JSONLW_EMU_ERROR(cudaErrorLaunchOutOfResources, "too many resources requested for launch"),
    JSONLW_EMU_ERROR(cudaErrorLaunchTimeout, "the launch timed out and was terminated"),
    JSONLW_EMU_ERROR(cudaErrorAssert, "device-side assert triggered"),
    JSONLW_EMU_ERROR(cudaErrorIllegalInstruction, "an illegal instruction was encountered"),
    JSONLW_EMU_ERROR(cudaErrorMisalignedAddress, "misaligned address"),
    JSONLW_EMU_ERROR(cudaErrorLaunchFailure, "unspecified launch failure"),
    JSONLW_EMU_ERROR(cudaErrorNotPermitted, "operation not permitted"),
    JSONLW_EMU_ERROR(cudaErrorNotSupported, "operation not supported"),
    JSONLW_EMU_ERROR(cudaErrorUnknown, "unknown error"),
};
#undef JSONLW_EMU_ERROR

const ErrorText* find_text(cudaError_t e) noexcept
{
    for (const ErrorText& t : error_texts)
        if (t.code == e) return &t;
    return nullptr;
}

}  // namespace

cudaError_t fail(cudaError_t e) noexcept
{
    if (e != cudaSuccess) last_error = e;
    return e;
}

bool in_host_func() noexcept { return host_func_running; }
void set_in_host_func(bool on) noexcept { host_func_running = on; }

}  // namespace jsonlw::emu::detail

using namespace jsonlw::emu::detail;

void jsonlw::emu::set_last_error(cudaError_t e) noexcept { fail(e); }

cudaError_t cudaGetLastError()
{
    const cudaError_t mine = last_error;
    last_error = cudaSuccess;
    Device& d = device();
    std::lock_guard lock(d.mu);
    return d.sticky != cudaSuccess ? d.sticky : mine;
}

cudaError_t cudaPeekAtLastError()
{
    Device& d = device();
    std::lock_guard lock(d.mu);
    return d.sticky != cudaSuccess ? d.sticky : last_error;
}

const char* cudaGetErrorName(cudaError_t error)
{
    const ErrorText* t = find_text(error);
    return t ? t->name : "unrecognized error code";
}

const char* cudaGetErrorString(cudaError_t error)
{
    const ErrorText* t = find_text(error);
    return t ? t->text : "unrecognized error code";
}
