// Harness: what a writer test sets up before its writer — a temp dir, a log capture, an
// IoRunner and, with `with_seam`, a SeamFileIo that options() routes file I/O through; declare
// it before the writer, so the writer is destroyed first and the io_context after it.
#pragma once

#include "io_runner.hpp"
#include "log_capture.hpp"
#include "options.hpp"
#include "seam_file_io.hpp"
#include "temp_dir.hpp"

#include <jsonlw/submit_result.hpp>
#include <jsonlw/writer_options.hpp>

#include <memory>
#include <utility>

namespace jsonlw_test {

struct WithSeam {
    explicit WithSeam() = default;
};
inline constexpr WithSeam with_seam{};

class Harness {
public:
    Harness() = default;
    explicit Harness(WithSeam) : seam(std::make_shared<SeamFileIo>()) {}
    Harness(const Harness&) = delete;
    Harness& operator=(const Harness&) = delete;

    // test_options() in the temp dir, through the seam when there is one.
    jsonlw::WriterOptions options() const
    {
        jsonlw::WriterOptions o = test_options(dir.path(), logs);
        if (seam) o.file_io = seam;
        return o;
    }

    boost::asio::io_context::executor_type executor() noexcept { return loop.executor(); }

    // Starts the writer, then the io_context's thread (a test that queues records before the
    // drain first runs calls w.start() and h.loop.start() itself).
    template <class Writer>
    void start(Writer& w)
    {
        w.start();
        loop.start();
    }

    // With `with_seam`: holds the next writev, submits `first` and waits until its append is
    // stuck there, so that what the test does next meets an append that has not finished.
    // False when the record was refused or its append never reached the seam.
    template <class Writer, class Record>
    bool stick_append(Writer& w, Record first)
    {
        seam->hold_writev();
        return w.submit(std::move(first)) == jsonlw::SubmitResult::accepted &&
               seam->wait_writev_held();
    }

    TempDir dir;
    LogCapture logs;
    std::shared_ptr<SeamFileIo> seam;  // null without `with_seam`
    IoRunner loop;                     // last: stopped and destroyed first of the four
};

}  // namespace jsonlw_test
