// ChainSink (docs/chain.md): every line the inner sink gets ends with the chain key; the
// chain advances only over the records the inner sink reports written; lines that are not
// objects are counted failed; the manifest records the files a FileSink opens and closes;
// WriterOptions::chain wraps a writer's sink, and invalid chain options disable the writer.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include "sink_rig.hpp"

#include "common.hpp"

#include <jsonlw/chain_manifest.hpp>
#include <jsonlw/sinks/chain_sink.hpp>
#include <jsonlw/sinks/file_sink.hpp>
#include <jsonlw/sinks/memory_sink.hpp>

#include <catch2/catch.hpp>

#include <sstream>

using namespace jsonlw;
using namespace jsonlw_test;

namespace {

const std::string zeros(64, '0');
// SHA-256("000…000" || {"a":1}) (docs/chain.md gives the openssl command).
constexpr const char* first_a = "fc6cee09194dd2578bd7664604fcb72a539066fd34544cea0009c43eb6cdc289";

AppendResult put_text(LineSink& sink, const std::string& text, std::size_t records,
                      std::string_view key = {})
{
    return sink.append(key, Lines{text, records, 0});
}

// verify_chain over `text` from 64 zeros: the value it ends with, or a failure.
std::string verified_end(const std::string& text)
{
    std::istringstream in(text);
    std::string prev = zeros;
    const auto b = verify_chain(in, ChainMode::sha256, std::nullopt, prev);
    if (b) FAIL("line " << b->line << ": " << b->detail);
    return prev;
}

}  // namespace

TEST_CASE("ChainSink hands the inner sink each line with the chain value of docs/chain.md",
          "[sinks][chain]")
{
    SinkRig rig;
    auto mem = std::make_shared<MemorySink>();
    ChainSink chain(mem, ChainMode::sha256);
    rig.start(chain);
    const AppendResult r = put_text(chain, "{\"a\":1}\n{}\n", 2);
    CHECK(r.records_written == 2);
    const auto lines = mem->lines();
    REQUIRE(lines.size() == 2);
    CHECK(lines[0].text == std::string("{\"a\":1,\"chain\":\"") + first_a + "\"}");
    CHECK(lines[1].text.rfind("{\"chain\":\"", 0) == 0);
    CHECK(chain.last() == verified_end(mem->text()));
}

TEST_CASE("ChainSink advances the chain only over the records the inner sink wrote, so a "
          "retried record chains onto the last that landed",
          "[sinks][chain]")
{
    SinkRig rig;
    auto mem = std::make_shared<MemorySink>();
    ChainSink chain(mem, ChainMode::sha256);
    rig.start(chain);
    REQUIRE(rig.put(chain, {}, 0, 2).records_written == 2);
    const std::string after_two = chain.last();
    // Of records 2, 3, 4 only 2 lands; 3 and 4 fail.
    mem->fail_next(std::make_error_code(std::errc::no_space_on_device), 1, 1);
    const AppendResult failed = rig.put(chain, {}, 2, 3);
    CHECK(failed.records_written == 1);
    CHECK(failed.records_failed == 2);
    CHECK(chain.last() != after_two);
    const std::string after_three = chain.last();
    // Records 3 and 4 again: they chain onto record 2's value, and the whole text verifies.
    REQUIRE(rig.put(chain, {}, 3, 2).records_written == 2);
    const auto lines = mem->lines();
    REQUIRE(lines.size() == 5);
    CHECK(lines[3].text.rfind("{\"id\":3,\"chain\":\"", 0) == 0);
    CHECK(verified_end(mem->text()) == chain.last());
    std::istringstream third(mem->text().substr(0, mem->text().find("{\"id\":3")));
    std::string prev = zeros;
    CHECK_FALSE(verify_chain(third, ChainMode::sha256, std::nullopt, prev));
    CHECK(prev == after_three);
}

TEST_CASE("ChainSink counts a line that is not a JSON object failed, logs why, and writes the "
          "rest of its group",
          "[sinks][chain]")
{
    SinkRig rig;
    auto mem = std::make_shared<MemorySink>();
    ChainSink chain(mem, ChainMode::sha256);
    rig.start(chain);
    const AppendResult r = put_text(chain, "{\"id\":0}\nnot json\n{\"id\":2}\n", 3);
    CHECK(r.records_written == 2);
    CHECK(r.records_failed == 1);
    CHECK(r.records_unknown == 0);
    CHECK(r.ec == std::errc::invalid_argument);
    CHECK(chain.bad_lines() == 1);
    CHECK(rig.logs.count(LogLevel::error, "is not one JSON object") == 1);
    CHECK(mem->lines().size() == 2);
    CHECK(verified_end(mem->text()) == chain.last());
}

TEST_CASE("ChainSink refuses mode none, and hmac-sha256 without a key", "[sinks][chain]")
{
    auto mem = std::make_shared<MemorySink>();
    CHECK_THROWS_AS(ChainSink(mem, ChainMode::none), std::invalid_argument);
    CHECK_THROWS_AS(ChainSink(mem, ChainMode::hmac_sha256), std::invalid_argument);
    CHECK_THROWS_AS(ChainSink(mem, ChainMode::sha256, ChainKey{"k"}), std::invalid_argument);
}

TEST_CASE("ChainSink over a rotating FileSink records each file's open and close in "
          "<stem>.chain, and each file starts where the one before ended",
          "[sinks][chain]")
{
    SinkRig rig;
    // Two 9-byte lines fit in 200 bytes once sealed (85 bytes each), a third does not.
    auto file = std::make_shared<FileSink>(FileSinkOptions{.rotation = {.rotate_bytes = 200}});
    ChainSink chain(file, ChainMode::sha256);
    rig.start(chain);
    REQUIRE(rig.put(chain, {}, 0, 5).records_written == 5);  // rotates in the group
    chain.close(false);
    const ChainManifest m = read_chain_manifest(rig.dir.path() / "t.chain");
    CHECK_FALSE(m.bad_line);
    REQUIRE(m.events.size() == 6);  // open, close x 3 files
    const auto files = file->files();
    REQUIRE(files.size() == 3);
    std::string prev = zeros;
    for (std::size_t i = 0; i < 3; ++i) {
        const ChainManifestEvent& open = m.events[2 * i];
        const ChainManifestEvent& close = m.events[2 * i + 1];
        CHECK(open.kind == ChainManifestEvent::Kind::open);
        CHECK(open.file == files[i].filename().string());
        CHECK(open.prev == prev);
        CHECK(open.mode == ChainMode::sha256);
        CHECK(close.kind == ChainManifestEvent::Kind::close);
        CHECK(close.records == (i < 2 ? 2u : 1u));
        std::istringstream in(read_file(files[i]));
        CHECK_FALSE(verify_chain(in, ChainMode::sha256, std::nullopt, prev));
        CHECK(close.last == prev);
    }
    CHECK(prev == chain.last());
}

TEST_CASE("A writer with chain sha256 ends each line with the chain key; with chain none its "
          "lines are exactly those of a writer without the option",
          "[sinks][chain]")
{
    for (const ChainMode mode : {ChainMode::none, ChainMode::sha256}) {
        Harness h;
        WriterOptions o = h.options();
        o.chain = mode;
        TestWriter w(h.executor(), o);
        for (int i = 0; i < 3; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
        h.start(w);
        close(w);
        const auto files = files_in(h.dir.path());
        const std::string text = read_file(w.file_path());
        if (mode == ChainMode::none) {
            CHECK(text == "{\"id\":0,\"text\":\"r0\",\"value\":0.0}\n"
                          "{\"id\":1,\"text\":\"r1\",\"value\":0.0}\n"
                          "{\"id\":2,\"text\":\"r2\",\"value\":0.0}\n");
            CHECK_FALSE(std::filesystem::exists(h.dir.path() / "test.chain"));
        } else {
            std::istringstream in(text);
            std::string prev = zeros;
            CHECK_FALSE(verify_chain(in, ChainMode::sha256, std::nullopt, prev));
            CHECK(split_lines(text).size() == 3);
            CHECK(std::filesystem::exists(h.dir.path() / "test.chain"));
        }
    }
}

TEST_CASE("A writer with chain hmac-sha256 and no key, or a key without hmac-sha256, is "
          "disabled at start() with a logged error",
          "[sinks][chain]")
{
    for (const bool with_key : {false, true}) {
        Harness h;
        WriterOptions o = h.options();
        o.chain = with_key ? ChainMode::sha256 : ChainMode::hmac_sha256;
        if (with_key) o.chain_key = ChainKey{"secret"};
        TestWriter w(h.executor(), o);
        h.start(w);
        CHECK(w.submit(rec(0)) != SubmitResult::accepted);
        CHECK(h.logs.count(LogLevel::error, with_key ? "a chain key is only for" : "needs a key") == 1);
    }
}

TEST_CASE("A manifest that cannot be written costs no record: the failure is logged once and "
          "counted",
          "[sinks][chain]")
{
    SinkRig rig;
    std::filesystem::create_directory(rig.dir.path() / "t.chain");  // open(O_WRONLY) fails
    auto file = std::make_shared<FileSink>(FileSinkOptions{.rotation = {.rotate_bytes = 200}});
    ChainSink chain(file, ChainMode::sha256);
    rig.start(chain);
    REQUIRE(rig.put(chain, {}, 0, 5).records_written == 5);
    chain.close(false);
    CHECK(chain.manifest_failures() == 6);  // three opens, three closes
    CHECK(rig.logs.count(LogLevel::error, "chain manifest") == 1);
    std::string prev = zeros;
    for (const auto& f : file->files()) {
        std::istringstream in(read_file(f));
        CHECK_FALSE(verify_chain(in, ChainMode::sha256, std::nullopt, prev));
    }
    CHECK(prev == chain.last());
}

TEST_CASE("read_last_chain_value finds the last complete line's value behind a torn tail, "
          "whatever the lines' lengths",
          "[sinks][chain]")
{
    TempDir dir;
    LineChain chain(ChainMode::sha256, std::nullopt);
    std::string text;
    chain.seal(text, "{\"a\":\"" + std::string(6000, 'x') + "\"}\n");  // longer than 4 KiB
    const std::string long_value = chain.last();
    chain.seal(text, "{\"b\":1}\n");
    const std::string short_value = chain.last();
    write_file(dir.path() / "f.jsonl", text);
    CHECK(read_last_chain_value(dir.path() / "f.jsonl") == short_value);
    write_file(dir.path() / "g.jsonl", text.substr(0, text.find("{\"b\"")) + "{\"torn\":\"" +
                                           std::string(9000, 'y'));
    CHECK(read_last_chain_value(dir.path() / "g.jsonl") == long_value);
    write_file(dir.path() / "h.jsonl", "{\"no\":\"chain\"}\n");
    CHECK_FALSE(read_last_chain_value(dir.path() / "h.jsonl"));
    CHECK_FALSE(read_last_chain_value(dir.path() / "missing.jsonl"));
}
