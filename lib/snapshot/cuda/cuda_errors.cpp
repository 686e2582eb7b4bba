// cuda_errors.hpp: the error text of the CUDA backend (the wording stats().last_error and
// create()'s exceptions carry).
#include "cuda_errors.hpp"

#include <stdexcept>

namespace jsonlw::snapshot::detail {

std::string cuda_error_text(const char* what, cudaError_t e)
{
    return std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

void check(cudaError_t e, const char* what)
{
    if (e != cudaSuccess) throw std::runtime_error(cuda_error_text(what, e));
}

}  // namespace jsonlw::snapshot::detail
