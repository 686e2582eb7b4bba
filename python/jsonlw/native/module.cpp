// jsonlw._native: the C++ writers for Python (docs/python.md). Python-facing classes are in
// jsonlw/*.py; this module is their engine.
#include "common.hpp"
#include "live_count.hpp"

#include <jsonlw/version.hpp>

PYBIND11_MODULE(_native, m)
{
    m.doc() = "jsonlw's C++ writers (use the jsonlw package, not this module)";
    m.attr("__version__") = jsonlw::version_string;
    jsonlw::python::register_io_context(m);
    jsonlw::python::register_live_count(m);
    jsonlw::python::register_perf_metrics(m);
    jsonlw::python::register_raw_output(m);
    jsonlw::python::register_request_trace(m);
    jsonlw::python::register_snapshot(m);
    jsonlw::python::register_device_array(m);
}
