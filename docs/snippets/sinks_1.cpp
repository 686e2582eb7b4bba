// Where lines go: a RawJsonWriter's lines teed to its file and to a sink of your own.
#include <jsonlw/jsonlw.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

// A sink of your own: lines to a socket, a pipe, a ring buffer... here, a count per key.
// Called on the writer's I/O thread only; it says exactly how many records landed.
class CountingSink final : public jsonlw::LineSink {
public:
    jsonlw::AppendResult append(std::string_view, const jsonlw::Lines& lines) noexcept override
    {
        jsonlw::AppendResult r;
        r.attempted = true;
        r.records_written = lines.records;  // every line "landed"
        r.landed = lines.bytes.size();
        seen_ += lines.records;
        return r;
    }
    std::uint64_t seen() const noexcept { return seen_; }  // read after close

private:
    std::uint64_t seen_ = 0;
};

int main()
{
    const auto dir = std::filesystem::temp_directory_path() / "jsonlw-doc-sinks";
    std::filesystem::remove_all(dir);
    boost::asio::io_context io;
    auto guard = boost::asio::make_work_guard(io);
    std::thread loop([&] { io.run(); });

    auto file = std::make_shared<jsonlw::FileSink>(jsonlw::FileSinkOptions{.rotation = {.rotate_bytes = 1 << 20}});
    auto counter = std::make_shared<CountingSink>();
    // The first branch is the record of truth: the writer counts what the file got.
    auto tee = std::make_shared<jsonlw::TeeSink>(
        std::vector<std::shared_ptr<jsonlw::LineSink>>{file, counter});
    jsonlw::RawJsonWriter w(io.get_executor(),
                            {.directory = dir, .stem = "events", .sink = tee});
    w.start();
    for (int i = 0; i < 100; ++i) w.submit(jsonlw::RawJsonText("{\"i\":" + std::to_string(i) + "}"));
    const jsonlw::CloseReport report = w.async_close(boost::asio::use_future).get();

    const auto second = tee->branch(1);
    std::printf("written %llu, file %s, second branch %llu written %llu failed\n",
                (unsigned long long)report.stats.written, file->files().front().c_str(),
                (unsigned long long)second.written, (unsigned long long)second.failed);
    guard.reset();
    loop.join();
    std::filesystem::remove_all(dir);
    return report.stats.written == 100 && counter->seen() == 100 && second.written == 100 ? 0 : 1;
}
