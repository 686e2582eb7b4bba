// Retention: a writer's rotated files kept within 3 files, oldest deleted first.
#include <jsonlw/jsonlw.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

int main()
{
    const auto dir = std::filesystem::temp_directory_path() / "jsonlw-doc-retention";
    std::filesystem::remove_all(dir);
    boost::asio::io_context io;
    auto guard = boost::asio::make_work_guard(io);
    std::thread loop([&] { io.run(); });

    // Files of at most 4 KiB; of the closed ones, the newest 3 stay (the open file is never
    // touched). retain_bytes and retain_age bound the same files by size and by age.
    auto file = std::make_shared<jsonlw::FileSink>(jsonlw::FileSinkOptions{
        .rotation = {.rotate_bytes = 4096, .retention = {.retain_files = 3}}});
    jsonlw::RawJsonWriter w(io.get_executor(), {.directory = dir, .stem = "events", .queue_capacity = 4096, .sink = file});
    w.start();
    for (int i = 0; i < 3000; ++i) w.submit(jsonlw::RawJsonText("{\"i\":" + std::to_string(i) + "}"));
    const jsonlw::CloseReport report = w.async_close(boost::asio::use_future).get();

    // What a reader finds is what was written less what retention deleted, exactly.
    const jsonlw::FileSinkCounters c = file->counters();
    std::size_t files = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file();
    std::printf("written %llu, deleted %llu records in %llu files (%llu bytes), %zu files left\n",
                (unsigned long long)report.stats.written, (unsigned long long)c.records_deleted,
                (unsigned long long)c.files_deleted, (unsigned long long)c.bytes_deleted, files);
    guard.reset();
    loop.join();
    std::filesystem::remove_all(dir);
    return report.stats.written == 3000 && files == 3 && c.files_deleted > 0 ? 0 : 1;
}
