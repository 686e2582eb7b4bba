// The sink stack (sinks/sink_stack.hpp): destination, path router, chain, OTLP encoding — the
// one order, for the engine and for a user who calls the factories. Through a writer: what
// the engine asks of its sink (file_path(), files_closed()) comes from the sink whatever wraps
// it, append(path) lines take the same chain as the rest, and WriterOptions::rotation reaches
// the FileSink, retention included.
#include <jsonlw/sinks/sink_stack.hpp>

#include "common.hpp"
#include "sink_rig.hpp"

#include <catch2/catch.hpp>

#include <jsonlw/sinks/chain_sink.hpp>
#include <jsonlw/sinks/file_sink.hpp>
#include <jsonlw/sinks/memory_sink.hpp>
#include <jsonlw/sinks/otlp_sink.hpp>
#include <jsonlw/sinks/path_router_sink.hpp>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <vector>

using namespace jsonlw;
using namespace jsonlw_test;
namespace fs = std::filesystem;

namespace {

std::string expected_line(int i)
{
    return "{\"id\":" + std::to_string(i) + ",\"text\":\"r" + std::to_string(i) + "\",\"value\":0.0}";
}

// The regular files under `dir`, sorted by name.
std::vector<fs::path> regular_files(const fs::path& dir)
{
    std::vector<fs::path> out;
    for (const auto& e : fs::recursive_directory_iterator(dir))
        if (e.is_regular_file()) out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
}

// Every batch to one file the encoder names (BatchOutput::append(path, lines)).
class NamedFileEncoder final : public TestEncoder {
public:
    explicit NamedFileEncoder(fs::path file) : file_(std::move(file)) {}
    void write_batch(std::span<const Rec> batch, BatchOutput<Rec>& out) override
    {
        out.append(file_, out.serialize_batch(batch));
    }

private:
    const fs::path file_;
};

// A sink of the test's own that is one file somewhere: it says so through the LineSink
// virtuals the engine reads, and writes nothing.
struct OneFileSink final : LineSink {
    AppendResult append(std::string_view, const Lines& lines) noexcept override
    {
        AppendResult r;
        r.records_written = lines.records;
        return r;
    }
    fs::path file_path() const override { return "/somewhere/else.jsonl"; }
    std::uint64_t files_closed() const noexcept override { return 7; }
};

// Queues records [from, to).
void submit(TestWriter& w, int from, int to)
{
    for (int i = from; i < to; ++i) REQUIRE(w.submit(rec(i)) == SubmitResult::accepted);
}

// Starts `w` with records [0, n) queued, so that they are its first batch, and flushes them.
void start_with(Harness& h, TestWriter& w, int n)
{
    w.start();
    submit(w, 0, n);
    h.loop.start();
    flush(w);
}

}  // namespace

TEST_CASE("make_sink_stack puts the destination under the path router, the router under the chain and the chain under the OTLP encoding", "[unit][sinks]")
{
    WriterOptions o;
    SECTION("plain options: a FileSink with the options' rotation, beside the named files")
    {
        o.rotation.rotate_bytes = 4096;
        o.rotation.retention.retain_files = 3;
        const auto s = make_sink_stack(o);
        const auto* router = dynamic_cast<PathRouterSink*>(s.get());
        REQUIRE(router != nullptr);
        const auto* file = dynamic_cast<FileSink*>(router->destination().get());
        REQUIRE(file != nullptr);
        CHECK(file->options().rotation.rotate_bytes == 4096);
        CHECK(file->options().rotation.retention.retain_files == 3);
    }
    SECTION("a sink of the options' own is the destination itself")
    {
        o.sink = std::make_shared<MemorySink>();
        const auto s = make_sink_stack(o);
        const auto* router = dynamic_cast<PathRouterSink*>(s.get());
        REQUIRE(router != nullptr);
        CHECK(router->destination() == o.sink);
    }
    SECTION("chain and OTLP: OtlpSink(ChainSink(PathRouterSink(destination)))")
    {
        o.sink = std::make_shared<MemorySink>();
        o.chain = ChainMode::sha256;
        o.format = LineFormat::otlp;
        const auto s = make_sink_stack(o);
        const auto* otlp = dynamic_cast<OtlpSink*>(s.get());
        REQUIRE(otlp != nullptr);
        const auto* chain = dynamic_cast<ChainSink*>(otlp->inner().get());
        REQUIRE(chain != nullptr);
        const auto* router = dynamic_cast<PathRouterSink*>(chain->inner().get());
        REQUIRE(router != nullptr);
        CHECK(router->destination() == o.sink);
    }
    SECTION("a writer that cannot name files (no write_batch() override) gets no router")
    {
        o.sink = std::make_shared<MemorySink>();
        CHECK(make_sink_stack(o, false) == o.sink);
        o.chain = ChainMode::sha256;
        const auto s = make_sink_stack(o, false);
        const auto* chain = dynamic_cast<ChainSink*>(s.get());
        REQUIRE(chain != nullptr);
        CHECK(chain->inner() == o.sink);
    }
    SECTION("a chain key without hmac-sha256 is refused")
    {
        o.sink = std::make_shared<MemorySink>();
        o.chain_key = ChainKey{std::string(32, 'k')};
        CHECK_THROWS_AS(make_sink_stack(o), std::invalid_argument);
    }
}

TEST_CASE("PathRouterSink sends a path key's lines to that file and every other key to the destination", "[unit][sinks]")
{
    SinkRig rig;
    auto mem = std::make_shared<MemorySink>();
    PathRouterSink router(mem);
    rig.start(router);
    const fs::path inside = rig.dir.path() / "named" / "a.jsonl";
    const fs::path outside = rig.dir.path().parent_path() /
                             (rig.dir.path().filename().native() + "-outside.jsonl");
    CHECK(SinkRig::put(router, "", 0, 2).records_written == 2);
    CHECK(SinkRig::put(router, PathRouterSink::path_key(inside), 2, 3).records_written == 3);
    CHECK(SinkRig::put(router, "k", 5, 1).records_written == 1);
    CHECK(SinkRig::put(router, PathRouterSink::path_key(outside), 6, 1).records_written == 1);
    CHECK(mem->text() == numbered(0, 2) + numbered(5, 1));
    CHECK(read_file(inside) == numbered(2, 3));
    CHECK(read_file(outside) == numbered(6, 1));
    // The writer's directory made absolute names a file under it; one elsewhere stays absolute.
    const fs::path abs_dir = fs::absolute(rig.dir.path()).lexically_normal();
    CHECK(router.files() == std::vector<fs::path>{abs_dir / "named" / "a.jsonl",
                                                  fs::absolute(outside).lexically_normal()});
    CHECK(router.describe(PathRouterSink::path_key(inside)) == (abs_dir / "named" / "a.jsonl").native());
    CHECK(router.describe("k") == "k");
    CHECK(router.file_path().empty());
    CHECK(router.files_closed() == 0);
    router.close(false);
    CHECK(mem->closed());
    fs::remove(outside);
}

TEST_CASE("A writer's file_path() and files_closed come from its sink through the chain and OTLP wrappers", "[integration][sinks]")
{
    SECTION("a FileSink under the chain: one sealed line (108 bytes) per 60-byte file")
    {
        Harness h;
        auto file = std::make_shared<FileSink>(FileSinkOptions{.rotation = {.rotate_bytes = 60}});
        WriterOptions o = h.options();
        o.sink = file;
        o.chain = ChainMode::sha256;
        TestWriter w(h.executor(), o);
        start_with(h, w, 3);
        close(w);
        const auto files = file->files();
        REQUIRE(files.size() == 3);
        CHECK(w.file_path() == files.front());
        CHECK(w.stats().files_closed == 2);
        CHECK(w.stats().written == 3);
    }
    SECTION("a FileSink under the OTLP encoding: each batch one line, each line a file")
    {
        Harness h;
        auto file = std::make_shared<FileSink>(FileSinkOptions{.rotation = {.rotate_bytes = 60}});
        WriterOptions o = h.options();
        o.sink = file;
        o.format = LineFormat::otlp;
        TestWriter w(h.executor(), o);
        start_with(h, w, 1);
        for (int i = 1; i < 3; ++i) {  // one record a batch
            submit(w, i, i + 1);
            flush(w);
        }
        close(w);
        const auto files = file->files();
        REQUIRE(files.size() == 3);
        CHECK(w.file_path() == files.front());
        CHECK(w.stats().files_closed == 2);
        CHECK(w.stats().written == 3);
    }
    SECTION("a sink of your own keeps the defaults: no file, none closed")
    {
        Harness h;
        WriterOptions o = h.options();
        o.sink = std::make_shared<MemorySink>();
        o.chain = ChainMode::sha256;
        TestWriter w(h.executor(), o);
        start_with(h, w, 2);
        close(w);
        CHECK(w.file_path().empty());
        CHECK(w.stats().files_closed == 0);
        CHECK(w.files().empty());
    }
    SECTION("a sink of your own that is one file says which, under the OTLP encoding too")
    {
        Harness h;
        WriterOptions o = h.options();
        o.sink = std::make_shared<OneFileSink>();
        o.format = LineFormat::otlp;
        TestWriter w(h.executor(), o);
        start_with(h, w, 2);
        CHECK(w.file_path() == fs::path("/somewhere/else.jsonl"));
        CHECK(w.stats().files_closed == 7);
        close(w);
        CHECK(w.stats().written == 2);
    }
}

TEST_CASE("append(path) lines go through the writer's chain: each sealed, the file in the manifest", "[integration][sinks][chain]")
{
    Harness h;
    WriterOptions o = h.options();
    o.chain = ChainMode::sha256;
    const fs::path named = h.dir.path() / "named" / "part.jsonl";
    TestWriter w(h.executor(), o, std::make_shared<NamedFileEncoder>(named));
    start_with(h, w, 3);
    submit(w, 3, 4);
    flush(w);
    const CloseReport report = close(w);
    // The chain of the named file's key runs on from batch to batch, from 64 zeros.
    LineChain chain(ChainMode::sha256, std::nullopt);
    std::string want;
    for (int i = 0; i < 4; ++i) chain.seal(want, expected_line(i) + "\n");
    CHECK(read_file(named) == want);
    CHECK(report.stats.written == 4);
    CHECK(report.stats.batches == 2);
    CHECK(report.stats.bytes == want.size());
    CHECK(read_file(h.dir.path() / "test.chain").find("\"named/part.jsonl\"") != std::string::npos);
    // Listed with the writer's files, after its own.
    const auto listed = w.files();
    REQUIRE(listed.size() == 2);
    CHECK(listed.front() == w.file_path());
    CHECK(listed.back() == fs::absolute(named).lexically_normal());
}

TEST_CASE("WriterOptions::rotation reaches the writer's FileSink, retention included", "[integration][sinks][retention]")
{
    Harness h;
    WriterOptions o = h.options();
    o.rotation.rotate_bytes = 60;  // one line per file: two do not fit
    o.rotation.retention.retain_files = 2;
    TestWriter w(h.executor(), o);
    start_with(h, w, 6);
    const CloseReport report = close(w);
    // Six files, each closed (five by rotation, the last by close); the newest two stay.
    const auto on_disk = regular_files(h.dir.path());
    REQUIRE(on_disk.size() == 2);
    CHECK(read_file(on_disk[0]) == expected_line(4) + "\n");
    CHECK(read_file(on_disk[1]) == expected_line(5) + "\n");
    CHECK(w.files() == on_disk);
    CHECK(report.stats.written == 6);
    CHECK(report.stats.files_closed == 5);
    CHECK(h.logs.count(LogLevel::info, "retain_files = 2 files") == 1);
}
