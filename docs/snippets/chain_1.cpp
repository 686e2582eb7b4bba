// A hash chain on a writer's lines: chain sha256, the file's events in events.chain, and the
// file recomputed from the value the manifest says it starts from.
#include <jsonlw/jsonlw.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

int main()
{
    const auto dir = std::filesystem::temp_directory_path() / "jsonlw-doc-chain";
    std::filesystem::remove_all(dir);
    boost::asio::io_context io;
    auto guard = boost::asio::make_work_guard(io);
    std::thread loop([&] { io.run(); });

    // hmac-sha256 instead: .chain = jsonlw::ChainMode::hmac_sha256,
    //                      .chain_key = jsonlw::ChainKey::from_file("/etc/myapp/chain.key")
    jsonlw::RawJsonWriter w(io.get_executor(),
                            {.directory = dir, .stem = "events", .chain = jsonlw::ChainMode::sha256});
    w.start();
    for (int i = 0; i < 100; ++i) w.submit(jsonlw::RawJsonText("{\"i\":" + std::to_string(i) + "}"));
    const jsonlw::CloseReport report = w.async_close(boost::asio::use_future).get();

    // `jsonlw verify DIR` does this for every file of every writer, and more.
    const jsonlw::ChainManifest m = jsonlw::read_chain_manifest(dir / "events.chain");
    std::ifstream file(dir / m.events.front().file);
    std::string value = m.events.front().prev;  // 64 zeros: the writer's first file
    const auto broken = jsonlw::verify_chain(file, jsonlw::ChainMode::sha256, std::nullopt, value);
    std::printf("written %llu, %s, last value %s (recorded at close: %s)\n",
                (unsigned long long)report.stats.written, broken ? "BROKEN" : "verified",
                value.c_str(), m.events.back().last.c_str());

    guard.reset();
    loop.join();
    std::filesystem::remove_all(dir);
    return report.stats.written == 100 && !broken && value == m.events.back().last ? 0 : 1;
}
