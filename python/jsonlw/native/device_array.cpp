// jsonlw._native.DeviceArray: device memory the module allocates itself and exposes through
// __cuda_array_interface__, so the CUDA path of SnapshotStage.capture() can be checked on a GPU
// machine without torch or cupy (bench/gpu/run.sh runs tests/python/gpu_check.py). Plus a
// stream the caller owns. Built with the CUDA runtime only when the snapshot stage's CUDA
// backend is (JSONLW_PYTHON_CUDA); otherwise every call raises RuntimeError.
#include "common.hpp"

#if defined(JSONLW_PYTHON_CUDA)
#include <cuda_runtime_api.h>
#endif

#include <cstdint>
#include <string>
#include <vector>

namespace jsonlw::python {
namespace {

#if defined(JSONLW_PYTHON_CUDA)
void check(cudaError_t e, const char* what)
{
    if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
#else
[[noreturn]] void no_cuda() { throw std::runtime_error("jsonlw was built without CUDA"); }
#endif

class DeviceArray {
public:
    // `host`: the bytes to copy in (their size must be prod(shape) * itemsize for the row
    // layout given by `row_stride`, in elements; 0: rows are packed).
    DeviceArray(py::buffer host, std::vector<std::int64_t> shape, std::string typestr, int device,
                std::int64_t row_stride)
        : shape_(std::move(shape)), typestr_(std::move(typestr)), device_(device)
    {
        py::buffer_info b = host.request();
        itemsize_ = std::stoi(typestr_.substr(2));
        if (shape_.size() == 2 && row_stride > 0) strides_ = {row_stride * itemsize_, itemsize_};
        std::int64_t n = itemsize_;
        if (shape_.size() == 2 && row_stride > 0) n = shape_[0] * row_stride * itemsize_;
        else
            for (auto s : shape_) n *= s;
        if (b.size * b.itemsize != n)
            throw py::value_error("host buffer has " + std::to_string(b.size * b.itemsize) +
                                  " bytes, the layout needs " + std::to_string(n));
        bytes_ = std::size_t(n);
#if defined(JSONLW_PYTHON_CUDA)
        check(cudaSetDevice(device_), "cudaSetDevice");
        check(cudaMalloc(&ptr_, bytes_ ? bytes_ : 1), "cudaMalloc");
        check(cudaMemcpy(ptr_, b.ptr, bytes_, cudaMemcpyHostToDevice), "cudaMemcpy");
#else
        no_cuda();
#endif
    }
    ~DeviceArray()
    {
#if defined(JSONLW_PYTHON_CUDA)
        if (ptr_) cudaFree(ptr_);
#endif
    }

    py::dict interface() const
    {
        py::dict d;
        py::tuple shape(shape_.size());
        for (std::size_t i = 0; i < shape_.size(); ++i) shape[i] = shape_[i];
        d["shape"] = shape;
        d["typestr"] = typestr_;
        d["data"] = py::make_tuple(reinterpret_cast<std::uintptr_t>(ptr_), false);
        d["version"] = 3;
        if (strides_.empty()) d["strides"] = py::none();
        else d["strides"] = py::make_tuple(strides_[0], strides_[1]);
        d["stream"] = py::none();
        return d;
    }

    py::bytes to_host() const
    {
        std::string out(bytes_, '\0');
#if defined(JSONLW_PYTHON_CUDA)
        {
            py::gil_scoped_release unlocked;
            check(cudaMemcpy(out.data(), ptr_, bytes_, cudaMemcpyDeviceToHost), "cudaMemcpy");
        }
#endif
        return py::bytes(out);
    }

private:
    std::vector<std::int64_t> shape_;
    std::vector<std::int64_t> strides_;
    std::string typestr_;
    int device_ = 0;
    std::int64_t itemsize_ = 4;
    std::size_t bytes_ = 0;
    void* ptr_ = nullptr;
};

}  // namespace

void register_device_array(py::module_& m)
{
    py::class_<DeviceArray>(m, "DeviceArray",
        "Device memory allocated by the module, exposed through __cuda_array_interface__.")
        .def(py::init<py::buffer, std::vector<std::int64_t>, std::string, int, std::int64_t>(),
             py::arg("host"), py::arg("shape"), py::arg("typestr"), py::arg("device") = 0,
             py::arg("row_stride") = 0)
        .def_property_readonly("__cuda_array_interface__", &DeviceArray::interface)
        .def("to_host", &DeviceArray::to_host);

    m.attr("built_with_cuda") =
#if defined(JSONLW_PYTHON_CUDA)
        true;
#else
        false;
#endif
    // A stream of the caller's (the handle as an int), its synchronization, its destruction.
    m.def("cuda_stream_create", []() -> std::uintptr_t {
#if defined(JSONLW_PYTHON_CUDA)
        cudaStream_t s = nullptr;
        check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
        return reinterpret_cast<std::uintptr_t>(s);
#else
        no_cuda();
#endif
    });
    m.def("cuda_stream_synchronize", [](std::uintptr_t s) {
#if defined(JSONLW_PYTHON_CUDA)
        py::gil_scoped_release unlocked;
        check(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(s)), "cudaStreamSynchronize");
#else
        (void)s;
        no_cuda();
#endif
    });
    m.def("cuda_stream_destroy", [](std::uintptr_t s) {
#if defined(JSONLW_PYTHON_CUDA)
        check(cudaStreamDestroy(reinterpret_cast<cudaStream_t>(s)), "cudaStreamDestroy");
#else
        (void)s;
        no_cuda();
#endif
    });
}

}  // namespace jsonlw::python
