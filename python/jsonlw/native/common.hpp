// Shared pieces of the jsonlw._native extension: the package's io_context thread, Python
// references that C++ threads may hold, the log queue that keeps the GIL off the I/O thread,
// and the conversion errors of records built from Python objects.
//
// The rule everywhere: a C++ thread of the writers (the io_context thread, a writer's I/O
// thread) never holds a Python object and never takes the GIL, except the io_context thread
// when it completes a start/flush/close a caller asked for (it then calls the caller's
// callback, which posts to its asyncio loop with call_soon_threadsafe).
#pragma once

#include <jsonlw/log.hpp>
#include <jsonlw/submit_result.hpp>
#include <jsonlw/writer_stats.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace jsonlw::python {

namespace py = pybind11;

// One io_context and the thread that runs it. The package makes one per process (shared by
// every writer); a caller may make its own. After fork() the child must forget() an inherited
// one: its thread does not exist there, and joining it would hang.
class IoContext : public std::enable_shared_from_this<IoContext> {
public:
    IoContext();
    ~IoContext();
    IoContext(const IoContext&) = delete;
    IoContext& operator=(const IoContext&) = delete;

    boost::asio::any_io_executor executor() { return io_.get_executor(); }
    // Lets the thread finish the handlers queued and joins it (GIL released by the caller).
    void stop() noexcept;
    bool running() const noexcept { return thread_.joinable() && !forgotten_; }
    // Fork child: never join, never destroy the io_context (its state belongs to the parent's
    // threads); the object is leaked on purpose.
    void forget() noexcept
    {
        if (forgotten_) return;
        forgotten_ = true;
        try {
            new std::shared_ptr<IoContext>(shared_from_this());  // never destroyed
        } catch (...) {
        }
    }
    bool forgotten() const noexcept { return forgotten_; }
    // Whether the calling thread is this context's thread.
    bool on_thread() const noexcept { return std::this_thread::get_id() == thread_id_; }

private:
    boost::asio::io_context io_;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
    std::thread thread_;
    std::thread::id thread_id_{};
    std::future<void> done_;
    bool forgotten_ = false;
};

// True once the interpreter is shutting down: C++ threads must not take the GIL then.
bool interpreter_finalizing() noexcept;

// A strong reference to a Python object that a C++ thread may carry (in a completion
// handler) and drop without the GIL. take() needs the GIL; the destructor takes the GIL to
// release a reference still held, unless the interpreter is finalizing (then it leaks).
class PyRef {
public:
    PyRef() = default;
    explicit PyRef(py::object o) : p_(o.release().ptr()) {}
    PyRef(PyRef&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
    PyRef& operator=(PyRef&& o) noexcept
    {
        if (this != &o) {
            reset();
            p_ = std::exchange(o.p_, nullptr);
        }
        return *this;
    }
    PyRef(const PyRef&) = delete;
    PyRef& operator=(const PyRef&) = delete;
    ~PyRef() { reset(); }
    py::object take() { return py::reinterpret_steal<py::object>(std::exchange(p_, nullptr)); }
    explicit operator bool() const noexcept { return p_ != nullptr; }

private:
    void reset() noexcept;
    PyObject* p_ = nullptr;
};

// Where the writers' log lines wait for Python's logging: the sink only appends (any thread,
// no GIL); emit() hands them to the Python logger on a thread that holds the GIL (the
// caller's, at its next submit/flush/close/stats, or a completion). Bounded: past
// `capacity` queued lines the newest are counted, not kept.
class LogQueue : public std::enable_shared_from_this<LogQueue> {
public:
    static constexpr std::size_t capacity = 1000;

    // The writer's sink: it owns the queue with the writer, so a writer that outlives its
    // Python object (left to a stuck append, inherited by a fork child) still logs into live
    // memory. Made with std::make_shared only.
    LogSink sink();
    bool pending() const noexcept { return pending_.load(std::memory_order_relaxed); }
    // GIL held. `logger`: a logging.Logger.
    void emit(const py::handle& logger) noexcept;
    void push(LogLevel level, std::string_view message);

private:
    mutable std::mutex mutex_;
    std::deque<std::pair<LogLevel, std::string>> lines_;
    std::uint64_t lost_ = 0;
    std::atomic<bool> pending_{false};
};

// A record the caller passed that cannot become a C++ record: its text is what the writer
// logs ("Dropped malformed <subject> record: <text>") when it drops the record as malformed.
struct BadRecord : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// --- reading Python values into C++ (GIL held; throw BadRecord) --------------------------

// Longest string accepted in a record field (bytes of UTF-8): past it the record is malformed.
inline constexpr std::size_t max_field_bytes = std::size_t{1} << 20;  // 1 MiB

std::string key_error(std::string_view key);  // "'key'", as Python's KeyError prints it
// A dict's item, or nullptr when absent (a non-str key anywhere in the dict: BadRecord).
PyObject* item(PyObject* dict, const char* key, std::string_view where);
PyObject* require(PyObject* dict, const char* key, std::string_view where);
void check_str_keys(PyObject* dict, std::string_view where);
bool is_dict(PyObject* o) noexcept;
// str (UTF-8, surrogates passed through: the writer replaces invalid UTF-8 and counts it
// as sanitized) of at most `max_bytes`.
std::string to_string(PyObject* o, std::string_view where, std::size_t max_bytes = max_field_bytes);
// int (not bool) that fits in int64.
std::int64_t to_int(PyObject* o, std::string_view where);
// int or float (not bool); non-finite values pass (the serializers reject them where a
// number is required and name the field).
double to_number(PyObject* o, std::string_view where);
// An id: str, or int written in decimal.
std::string to_id(PyObject* o, std::string_view where);

// --- results to Python -------------------------------------------------------------------
py::dict stats_dict(const WriterStats& s);
// The Python jsonlw.SubmitResult member for `r` (an enum.IntEnum made at import).
py::object submit_result(SubmitResult r);
PyObject** submit_results() noexcept;
py::dict close_report_dict(const CloseReport& r);

// Completion helpers: a handler that, on the io_context thread, takes the GIL (unless the
// interpreter is finalizing), emits the queued logs and calls `callback(value)`. A callback
// that raises is reported as unraisable, never propagated into the C++ thread.
void call_back(PyRef& callback, const std::shared_ptr<LogQueue>& logs, const py::handle& logger,
               py::object value) noexcept;

void register_io_context(py::module_& m);
void register_perf_metrics(py::module_& m);
void register_raw_output(py::module_& m);
void register_request_trace(py::module_& m);
void register_snapshot(py::module_& m);
void register_device_array(py::module_& m);

}  // namespace jsonlw::python
