// A file sink of your own: each group written with writev through the writer's FileIo seam,
// durable only in sync() and close(durable), failures reported as they happened — then the
// conformance check run on it, and the sink used by a writer under fsync_batch.
#include <jsonlw/jsonlw.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

// One file, <directory>/<stem>.jsonl. start() runs on the writer's start() thread, files() on
// any thread, everything else on the writer's I/O thread, one call at a time.
class LinesFileSink final : public jsonlw::LineSink {
public:
    ~LinesFileSink() override { close(false); }

    std::error_code start(const jsonlw::SinkContext& ctx) override
    {
        ctx_ = ctx;  // a copy: the writer's SinkContext lives only during its start()
        path_ = ctx.directory / (ctx.stem + ".jsonl");
        return {};
    }

    jsonlw::AppendResult append(std::string_view, const jsonlw::Lines& lines) noexcept override
    {
        jsonlw::AppendResult r;
        if (fd_ < 0 && !open_file(r)) {
            r.records_failed = lines.records;  // nothing reached the file
            return r;
        }
        r.attempted = true;
        r.offset = size_;
        // A compressing sink would deflate into a buffer of its own here and write all of it
        // (Z_SYNC_FLUSH) before returning: a record still in memory is not written.
        std::size_t done = 0;
        while (done < lines.bytes.size() && !r.ec) {
            iovec iov{const_cast<char*>(lines.bytes.data()) + done, lines.bytes.size() - done};
            const ssize_t w = ctx_.file_io->writev(fd_, &iov, 1);
            if (w > 0) done += static_cast<std::size_t>(w);
            else if (w == 0) r.ec = std::make_error_code(std::errc::io_error);
            else if (errno != EINTR) r.ec = {errno, std::system_category()};
        }
        size_ += done;
        r.landed = done;
        if (!r.ec) {
            unsynced_ = true;
            r.records_written = lines.records;  // in the kernel; sync() makes them durable
            return r;
        }
        // The failure: a record any byte of which landed may be read (unknown), the rest
        // surely not (failed). One OTLP line holds every record of the group.
        const std::string_view head = lines.bytes.substr(0, done);
        std::size_t touched = std::count(head.begin(), head.end(), '\n');
        if (!head.empty() && head.back() != '\n') ++touched;
        r.records_unknown = lines.log_records && done > 0 ? lines.records
                                                          : std::min(touched, lines.records);
        r.records_failed = lines.records - r.records_unknown;
        close_file();  // the next append opens the file again
        return r;
    }

    std::error_code sync() noexcept override
    {
        if (fd_ < 0 || !unsynced_) return {};  // nothing written since the last one: free
        if (ctx_.file_io->fsync(fd_) != 0) return {errno, std::system_category()};
        unsynced_ = false;
        return {};
    }

    std::error_code reopen() noexcept override  // SIGHUP: the next append opens the path anew
    {
        const std::error_code ec =
            ctx_.durability != jsonlw::Durability::none ? sync() : std::error_code{};
        close_file();
        return ec;
    }

    void close(bool durable) noexcept override  // idempotent: the destructor calls it too
    {
        if (durable) sync();
        close_file();
        closed_ = true;
    }

    std::vector<std::filesystem::path> files() const override
    {
        if (!created_.load()) return {};
        return {path_};
    }
    std::string describe(std::string_view) const override { return path_.native(); }

private:
    bool open_file(jsonlw::AppendResult& r) noexcept
    {
        if (closed_) {
            r.ec = std::make_error_code(std::errc::bad_file_descriptor);
            return false;
        }
        fd_ = ctx_.file_io->open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
                                 ctx_.file_mode);
        if (fd_ < 0) {
            r.ec = {errno, std::system_category()};
            return false;
        }
        struct stat st {};
        size_ = ctx_.file_io->fstat(fd_, &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
        created_.store(true);
        return true;
    }
    void close_file() noexcept
    {
        if (fd_ >= 0) ctx_.file_io->close(fd_);
        fd_ = -1;
    }

    jsonlw::SinkContext ctx_;
    std::filesystem::path path_;
    int fd_ = -1;
    std::uint64_t size_ = 0;
    bool unsynced_ = false;
    bool closed_ = false;
    std::atomic<bool> created_{false};
};

int main()
{
    // Every rule of the contract, under each durability, with faults; a failure names its rule.
    const jsonlw::testing::ConformanceReport report =
        jsonlw::testing::check_sink([] { return std::make_shared<LinesFileSink>(); });
    std::fputs(report.to_string().c_str(), stdout);

    // In a writer: under fsync_batch the engine calls sync() after each batch and counts the
    // batch written once it succeeded. FaultySink fails the first append here, on purpose
    // (logged: "Failed to write events JSONL: No space left on device (<the file>)").
    const auto dir = std::filesystem::temp_directory_path() / "jsonlw-doc-sinks-3";
    std::filesystem::remove_all(dir);
    boost::asio::io_context io;
    auto guard = boost::asio::make_work_guard(io);
    std::thread loop([&] { io.run(); });
    auto sink = std::make_shared<LinesFileSink>();
    auto faulty = std::make_shared<jsonlw::FaultySink>(sink);
    faulty->fail_appends(std::make_error_code(std::errc::no_space_on_device));
    jsonlw::RawJsonWriter w(io.get_executor(),
                            {.directory = dir, .stem = "events", .subject = "events",
                             .batch_records = 10,
                             .durability = jsonlw::Durability::fsync_batch, .sink = faulty});
    for (int i = 0; i < 100; ++i) w.submit(jsonlw::RawJsonText("{\"i\":" + std::to_string(i) + "}"));
    w.start();
    const jsonlw::CloseReport closed = w.async_close(boost::asio::use_future).get();
    std::printf("written %llu, write_error %llu, syncs %llu, file %s\n",
                (unsigned long long)closed.stats.written,
                (unsigned long long)closed.stats.dropped.write_error,
                (unsigned long long)faulty->counts().syncs, sink->files().front().c_str());
    guard.reset();
    loop.join();
    std::filesystem::remove_all(dir);
    return report.ok() && closed.stats.written == 90 && closed.stats.dropped.write_error == 10
               ? 0
               : 1;
}
