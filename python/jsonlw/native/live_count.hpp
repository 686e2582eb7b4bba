// A writer's counter read as a plain int attribute, as TensorRT-LLM's writers expose theirs
// (`dropped_records`, RawOutputDump's `_dropped`): each read is one C call that reads the
// C++ writer's live counters — no Python frame, no stats dict.
//
// The Python class holds, per instance, a source capsule (live_count_source()) under a
// private attribute, and on the class a property whose getter is live_count_getter(that
// attribute's name): reading the property looks the capsule up and calls its read(). GIL held
// throughout; the capsule (and the writer box it keeps) lives as long as the instance.
#pragma once

#include "common.hpp"

#include <cstdint>
#include <memory>
#include <new>
#include <utility>

namespace jsonlw::python {

// One counter of one writer: read() is the value now (a few atomic loads; GIL held).
class LiveCount {
public:
    virtual ~LiveCount() = default;
    virtual std::uint64_t read() const noexcept = 0;
};

inline constexpr const char* live_count_capsule_name = "jsonlw.live_count";

// The capsule a Python writer keeps for `read` (a callable returning std::uint64_t).
template <class Read>
py::object live_count_source(Read read)
{
    struct Impl final : LiveCount {
        explicit Impl(Read r) : r_(std::move(r)) {}
        std::uint64_t read() const noexcept override { return r_(); }
        Read r_;
    };
    auto impl = std::make_unique<Impl>(std::move(read));
    PyObject* cap = PyCapsule_New(static_cast<LiveCount*>(impl.get()), live_count_capsule_name,
                                  [](PyObject* c) {
                                      delete static_cast<LiveCount*>(
                                          PyCapsule_GetPointer(c, live_count_capsule_name));
                                  });
    if (!cap) throw py::error_already_set();
    impl.release();
    return py::reinterpret_steal<py::object>(cap);
}

// _native.live_count_getter(name): a builtin taking the instance (a property's getter) and
// returning the counter of the capsule found in its attribute `name`.
inline void register_live_count(py::module_& m)
{
    m.def("live_count_getter", [](py::str name) {
        static PyMethodDef def{
            "live_count",
            reinterpret_cast<PyCFunction>(+[](PyObject* name, PyObject* self) -> PyObject* {
                PyObject* cap = PyObject_GetAttr(self, name);
                if (!cap) return nullptr;
                auto* count =
                    static_cast<LiveCount*>(PyCapsule_GetPointer(cap, live_count_capsule_name));
                PyObject* value = count ? PyLong_FromUnsignedLongLong(count->read()) : nullptr;
                Py_DECREF(cap);
                return value;
            }),
            METH_O, "The writer's live counter (an int)."};
        PyObject* interned = name.release().ptr();
        PyUnicode_InternInPlace(&interned);
        PyObject* fn = PyCFunction_New(&def, interned);
        Py_DECREF(interned);
        if (!fn) throw py::error_already_set();
        return py::reinterpret_steal<py::object>(fn);
    });
}

}  // namespace jsonlw::python
