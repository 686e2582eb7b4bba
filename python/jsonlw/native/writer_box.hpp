// WriterBox<W>: what a Python writer object holds — the C++ writer, the io_context it runs on
// (kept alive longer than the writer), its log queue and its Python logger — and the
// start/flush/close operations every writer offers, completed through a Python callback.
#pragma once

#include "common.hpp"
#include "live_count.hpp"

#include <jsonlw/jsonl_record_writer.hpp>

#include <boost/asio/post.hpp>

#include <chrono>
#include <future>
#include <memory>
#include <new>
#include <optional>
#include <thread>

namespace jsonlw::python {

template <class W>
class WriterBox {
public:
    WriterBox(std::shared_ptr<IoContext> io, std::shared_ptr<LogQueue> logs, py::object logger)
        : io_(std::move(io)), logs_(std::move(logs)), logger_(std::move(logger))
    {
    }
    WriterBox(const WriterBox&) = delete;
    WriterBox& operator=(const WriterBox&) = delete;

    ~WriterBox()
    {
        if (inherited_ || !w_) {
            // Fork child: the writer's threads do not exist here; never destroy it.
            if (inherited_) leak();
            return;
        }
        py::gil_scoped_release unlocked;  // destruction waits for a running batch
        // A batch mid-append gets the writer's shutdown timeout to return, as a close would.
        // One that does not (a disk that stopped), or that a close already gave up on, would
        // make the destructor wait forever, at interpreter exit too. Its I/O thread still
        // uses the writer, so the writer is leaked on purpose, with its io_context and log
        // queue (leak()).
        const auto deadline =
            std::chrono::steady_clock::now() + w_->options().shutdown_timeout;
        while (w_->appending() && !w_->append_outlived_close() &&
               std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        if (w_->appending()) {
            leak();
            return;
        }
        w_.reset();
    }

    void set(std::shared_ptr<W> w) { w_ = std::move(w); }
    W& writer() const { return *w_; }
    const std::shared_ptr<W>& shared() const { return w_; }
    IoContext& io() const { return *io_; }
    const std::shared_ptr<IoContext>& io_shared() const { return io_; }
    bool inherited() const noexcept { return inherited_; }

    // GIL held: hand the queued log lines to Python's logging.
    void emit_logs() const noexcept
    {
        if (logs_->pending()) logs_->emit(logger_);
    }

    void logs_warning(std::string_view message) const { logs_->push(LogLevel::warning, message); }

    // start() on the io_context thread (it creates the directory: no file system call on the
    // caller's thread), then callback(None).
    void start_async(py::object callback)
    {
        PyRef cb(std::move(callback));
        PyRef logger(logger_);
        boost::asio::post(io_->executor(), [w = w_, logs = logs_, cb = std::move(cb),
                                            logger = std::move(logger)]() mutable {
            w->start();
            complete(cb, logger, *logs, [] { return py::object(py::none()); });
        });
    }

    void start_now()
    {
        py::gil_scoped_release unlocked;
        w_->start();
    }

    // Flush and close are initiated on the io_context thread too, after a start_async() posted
    // before them (the context runs its handlers in order): a close right after an
    // unawaited start never overtakes it.
    template <class F>
    void in_order(F&& f)
    {
        if (io_->running()) boost::asio::post(io_->executor(), std::forward<F>(f));
        else f();
    }

    void flush_async(py::object callback)
    {
        PyRef cb(std::move(callback));
        PyRef logger(logger_);
        in_order([w = w_, logs = logs_, cb = std::move(cb), logger = std::move(logger)]() mutable {
        w->async_flush([logs = std::move(logs), cb = std::move(cb), logger = std::move(logger)](
                            error_code ec) mutable {
            complete(cb, logger, *logs, [ec] { return py::object(py::bool_(!ec)); });
        });
        });
    }

    void close_async(py::object callback)
    {
        PyRef cb(std::move(callback));
        PyRef logger(logger_);
        in_order([w = w_, logs = logs_, cb = std::move(cb), logger = std::move(logger)]() mutable {
        w->async_close([logs = std::move(logs), cb = std::move(cb), logger = std::move(logger)](
                            error_code, CloseReport r) mutable {
            complete(cb, logger, *logs, [r] { return py::object(close_report_dict(r)); });
        });
        });
    }

    // Blocks (GIL released) until the flush completes or `timeout` seconds pass; true when
    // everything submitted before it was resolved.
    bool flush_wait(std::optional<double> timeout)
    {
        auto done = std::make_shared<std::promise<bool>>();
        std::future<bool> f = done->get_future();
        in_order([w = w_, done] { w->async_flush([done](error_code ec) { done->set_value(!ec); }); });
        const bool ready = wait(f, timeout);
        emit_logs();
        return ready && f.get();
    }

    // Blocks (GIL released) until close completes (at most the writer's shutdown timeout
    // plus a margin) or `timeout` seconds pass: the report, or None on the timeout.
    py::object close_wait(std::optional<double> timeout)
    {
        auto done = std::make_shared<std::promise<CloseReport>>();
        std::future<CloseReport> f = done->get_future();
        in_order([w = w_, done] {
            w->async_close([done](error_code, CloseReport r) { done->set_value(r); });
        });
        const bool ready = wait(f, timeout);
        emit_logs();
        if (!ready) return py::none();
        return close_report_dict(f.get());
    }

    py::dict stats() const
    {
        emit_logs();
        return stats_dict(w_->stats());
    }

    // Fork child: this writer was the parent's.
    void mark_inherited() noexcept { inherited_ = true; }

private:
    // Keeps the writer, and the io_context it posts to, alive for the rest of the process
    // (its log sink owns the log queue). Never destroyed: that is the point.
    void leak() noexcept
    {
        struct Kept {
            std::shared_ptr<W> writer;
            std::shared_ptr<IoContext> io;
        };
        // Copies: the members' own destruction then leaves the kept owners. Out of memory
        // even for these 16 bytes, the writer is destroyed as usual (and waits).
        if (!new (std::nothrow) Kept{w_, io_}) (void)new (std::nothrow) std::shared_ptr<W>(w_);
    }

    template <class T>
    static bool wait(std::future<T>& f, std::optional<double> timeout)
    {
        py::gil_scoped_release unlocked;
        if (!timeout) {
            f.wait();
            return true;
        }
        return f.wait_for(std::chrono::duration<double>(*timeout)) == std::future_status::ready;
    }

    template <class Make>
    static void complete(PyRef& cb, PyRef& logger, LogQueue& logs, Make make) noexcept
    {
        if (interpreter_finalizing()) return;  // leaks the references: no GIL to be had
        py::gil_scoped_acquire gil;
        try {
            py::object lg = logger.take();
            if (logs.pending()) logs.emit(lg);
            py::object fn = cb.take();
            fn(make());
        } catch (py::error_already_set& e) {
            e.discard_as_unraisable("jsonlw completion callback");
        } catch (...) {
        }
    }

    std::shared_ptr<IoContext> io_;
    std::shared_ptr<LogQueue> logs_;
    py::object logger_;
    std::shared_ptr<W> w_;
    bool inherited_ = false;
};

// The methods every writer class exposes to Python, bound once per writer type.
template <class Box, class PyClass>
void bind_writer_common(PyClass& cls)
{
    cls.def("start_async", &Box::start_async)
        .def("start_now", &Box::start_now)
        .def("flush_async", &Box::flush_async)
        .def("close_async", &Box::close_async)
        .def("flush_wait", &Box::flush_wait, py::arg("timeout") = py::none())
        .def("close_wait", &Box::close_wait, py::arg("timeout") = py::none())
        .def("stats", &Box::stats)
        .def("emit_logs", &Box::emit_logs)
        .def("mark_inherited", &Box::mark_inherited)
        .def_property_readonly("inherited", &Box::inherited)
        .def_property_readonly("enabled", [](const Box& b) { return b.writer().enabled(); })
        .def_property_readonly("file_path",
                               [](const Box& b) { return b.writer().file_path().string(); })
        .def_property_readonly("shutdown_timeout", [](const Box& b) {
            return std::chrono::duration<double>(b.writer().options().shutdown_timeout).count();
        })
        // TensorRT-LLM's `dropped_records` (a plain int there), read live: every drop but a
        // submit after close (queue full, malformed, write error, shutdown, ...).
        .def("dropped_records_source", [](std::shared_ptr<Box> b) {
            return live_count_source([b = std::move(b)]() noexcept -> std::uint64_t {
                b->emit_logs();
                const WriterStats s = b->writer().stats();
                return s.dropped.total() - s.dropped.closed;
            });
        });
}

}  // namespace jsonlw::python
