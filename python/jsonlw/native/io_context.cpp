// The package's io_context thread, Python references held by C++ threads, the log queue and
// the helpers that read Python values into C++ records.
#include "common.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <future>

namespace jsonlw::python {

IoContext::IoContext() : guard_(boost::asio::make_work_guard(io_))
{
    std::promise<void> finished;
    done_ = finished.get_future();
    thread_ = std::thread([this, finished = std::move(finished)]() mutable {
        for (;;) {
            try {
                io_.run();
                break;
            } catch (...) {
                // A handler threw (none should): keep the loop alive for the others.
            }
        }
        finished.set_value();
    });
    thread_id_ = thread_.get_id();
}

IoContext::~IoContext()
{
    if (forgotten_) return;  // unreachable: forgotten contexts are leaked, never destroyed
    stop();
}

void IoContext::stop() noexcept
{
    if (forgotten_ || !thread_.joinable()) return;
    guard_.reset();
    if (on_thread()) {
        thread_.detach();
        return;
    }
    // Handlers still queued (a close completing) run first; run() returns once no writer
    // has work left. A writer never closed keeps it busy: stop it after a grace period.
    if (done_.wait_for(std::chrono::seconds(2)) != std::future_status::ready) io_.stop();
    thread_.join();
}

bool interpreter_finalizing() noexcept
{
    return !Py_IsInitialized() || _Py_IsFinalizing();
}

void PyRef::reset() noexcept
{
    if (!p_) return;
    if (interpreter_finalizing()) {
        p_ = nullptr;  // leaked: the GIL cannot be taken any more
        return;
    }
    py::gil_scoped_acquire gil;
    Py_DECREF(p_);
    p_ = nullptr;
}

LogSink LogQueue::sink()
{
    return [self = shared_from_this()](LogLevel level, std::string_view message) {
        self->push(level, message);
    };
}

void LogQueue::push(LogLevel level, std::string_view message)
{
    try {
        std::lock_guard lock(mutex_);
        if (lines_.size() >= capacity) {
            ++lost_;
        } else {
            lines_.emplace_back(level, std::string(message));
        }
        pending_.store(true, std::memory_order_relaxed);
    } catch (...) {
    }
}

void LogQueue::emit(const py::handle& logger) noexcept
{
    std::deque<std::pair<LogLevel, std::string>> lines;
    std::uint64_t lost = 0;
    {
        std::lock_guard lock(mutex_);
        lines.swap(lines_);
        lost = std::exchange(lost_, 0);
        pending_.store(false, std::memory_order_relaxed);
    }
    try {
        for (auto& [level, text] : lines) {
            int py_level = 30;
            switch (level) {
            case LogLevel::debug: py_level = 10; break;
            case LogLevel::info: py_level = 20; break;
            case LogLevel::warning: py_level = 30; break;
            case LogLevel::error: py_level = 40; break;
            }
            py::object msg = py::reinterpret_steal<py::object>(
                PyUnicode_DecodeUTF8(text.data(), Py_ssize_t(text.size()), "replace"));
            if (!msg) {
                PyErr_Clear();
                continue;
            }
            logger.attr("log")(py_level, "%s", msg);
        }
        if (lost)
            logger.attr("warning")(
                fmt::format("jsonlw: {} log lines were not kept (more than {} queued)", lost,
                            capacity));
    } catch (py::error_already_set& e) {
        e.discard_as_unraisable("jsonlw log");
    } catch (...) {
    }
}

std::string key_error(std::string_view key) { return fmt::format("'{}'", key); }

bool is_dict(PyObject* o) noexcept { return o && PyDict_Check(o); }

void check_str_keys(PyObject* dict, std::string_view where)
{
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(dict, &pos, &k, &v))
        if (!PyUnicode_Check(k))
            throw BadRecord(fmt::format("non-string key in {}", where));
}

PyObject* item(PyObject* dict, const char* key, std::string_view)
{
    PyObject* v = PyDict_GetItemString(dict, key);  // borrowed; never raises
    return v;
}

PyObject* require(PyObject* dict, const char* key, std::string_view where)
{
    PyObject* v = item(dict, key, where);
    if (!v) throw BadRecord(key_error(key));
    return v;
}

std::string to_string(PyObject* o, std::string_view where, std::size_t max_bytes)
{
    if (!PyUnicode_Check(o))
        throw BadRecord(fmt::format("{} must be a str, got {}", where, Py_TYPE(o)->tp_name));
    if (std::size_t(PyUnicode_GET_LENGTH(o)) > max_bytes)
        throw BadRecord(fmt::format("{} is longer than {} bytes", where, max_bytes));
    Py_ssize_t n = 0;
    if (const char* s = PyUnicode_AsUTF8AndSize(o, &n)) {
        if (std::size_t(n) > max_bytes)
            throw BadRecord(fmt::format("{} is longer than {} bytes", where, max_bytes));
        return std::string(s, std::size_t(n));
    }
    PyErr_Clear();
    // Lone surrogates (UTF-8 cannot encode them): each becomes one 0xFF byte, which the writer
    // replaces by one U+FFFD and counts as sanitized (stats()["sanitized"]).
    std::string out;
    const Py_ssize_t len = PyUnicode_GET_LENGTH(o);
    const int kind = PyUnicode_KIND(o);
    const void* data = PyUnicode_DATA(o);
    out.reserve(std::size_t(len) * 2);
    for (Py_ssize_t i = 0; i < len; ++i) {
        const Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c < 0x80) {
            out.push_back(char(c));
        } else if (c < 0x800) {
            out.push_back(char(0xC0 | (c >> 6)));
            out.push_back(char(0x80 | (c & 0x3F)));
        } else if (c >= 0xD800 && c <= 0xDFFF) {
            out.push_back(char(0xFF));
        } else if (c < 0x10000) {
            out.push_back(char(0xE0 | (c >> 12)));
            out.push_back(char(0x80 | ((c >> 6) & 0x3F)));
            out.push_back(char(0x80 | (c & 0x3F)));
        } else {
            out.push_back(char(0xF0 | (c >> 18)));
            out.push_back(char(0x80 | ((c >> 12) & 0x3F)));
            out.push_back(char(0x80 | ((c >> 6) & 0x3F)));
            out.push_back(char(0x80 | (c & 0x3F)));
        }
        if (out.size() > max_bytes)
            throw BadRecord(fmt::format("{} is longer than {} bytes", where, max_bytes));
    }
    return out;
}

std::int64_t to_int(PyObject* o, std::string_view where)
{
    if (!PyLong_Check(o) || PyBool_Check(o))
        throw BadRecord(fmt::format("{} must be an int, got {}", where, Py_TYPE(o)->tp_name));
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        throw BadRecord(fmt::format("{} does not fit in 64 bits", where));
    }
    return v;
}

double to_number(PyObject* o, std::string_view where)
{
    if (PyFloat_Check(o)) return PyFloat_AS_DOUBLE(o);
    if (PyLong_Check(o) && !PyBool_Check(o)) {
        const double d = PyLong_AsDouble(o);
        if (d == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            throw BadRecord(fmt::format("{} is out of range", where));
        }
        return d;
    }
    throw BadRecord(fmt::format("{} must be a number, got {}", where, Py_TYPE(o)->tp_name));
}

std::string to_id(PyObject* o, std::string_view where)
{
    if (PyUnicode_Check(o)) return to_string(o, where, 4096);
    if (PyLong_Check(o) && !PyBool_Check(o)) {
        PyObject* s = PyObject_Str(o);
        if (!s) {
            PyErr_Clear();
            throw BadRecord(fmt::format("{} cannot be written", where));
        }
        std::string out = to_string(s, where, 4096);
        Py_DECREF(s);
        return out;
    }
    throw BadRecord(fmt::format("{} must be a str or an int, got {}", where, Py_TYPE(o)->tp_name));
}

py::dict stats_dict(const WriterStats& s)
{
    py::dict dropped;
    dropped["queue_full"] = s.dropped.queue_full;
    dropped["oldest_evicted"] = s.dropped.oldest_evicted;
    dropped["malformed"] = s.dropped.malformed;
    dropped["write_error"] = s.dropped.write_error;
    dropped["shutdown"] = s.dropped.shutdown;
    dropped["unexpected"] = s.dropped.unexpected;
    dropped["closed"] = s.dropped.closed;
    py::dict d;
    d["submitted"] = s.submitted;
    d["written"] = s.written;
    d["batches"] = s.batches;
    d["bytes"] = s.bytes;
    d["sanitized"] = s.sanitized;
    d["unknown"] = s.unknown;
    d["pending"] = s.pending;
    d["dropped"] = dropped;
    return d;
}

py::dict close_report_dict(const CloseReport& r)
{
    py::dict d;
    d["stats"] = stats_dict(r.stats);
    d["drained"] = r.drained;
    return d;
}

void register_io_context(py::module_& m)
{
    py::class_<IoContext, std::shared_ptr<IoContext>>(m, "IoContext",
        "An asio::io_context and the thread that runs it (the writers' executor).")
        .def(py::init<>())
        .def("stop", [](IoContext& io) {
            py::gil_scoped_release unlocked;
            io.stop();
        })
        .def("forget", &IoContext::forget)
        .def_property_readonly("running", &IoContext::running);

    // An enum.IntEnum, not a pybind11 enum: submit() returns one of its four members (cached),
    // so `r is SubmitResult.accepted` holds and `==` is int comparison — a pybind11 enum's
    // __eq__ is a bound C++ call, as slow as the submit itself.
    py::object int_enum = py::module_::import("enum").attr("IntEnum");
    py::list members;
    for (const char* name : {"accepted", "dropped_queue_full", "closed", "disabled"})
        members.append(py::make_tuple(name, members.size()));
    py::object cls = int_enum("SubmitResult", members, py::arg("module") = "jsonlw");
    cls.attr("__doc__") = "What happened to one submitted record (jsonlw::SubmitResult).";
    m.attr("SubmitResult") = cls;
    for (int i = 0; i < 4; ++i) submit_results()[i] = cls(i).release().ptr();  // kept for good
}

PyObject** submit_results() noexcept
{
    static PyObject* members[4] = {};
    return members;
}

py::object submit_result(SubmitResult r)
{
    return py::reinterpret_borrow<py::object>(submit_results()[static_cast<int>(r)]);
}

}  // namespace jsonlw::python
