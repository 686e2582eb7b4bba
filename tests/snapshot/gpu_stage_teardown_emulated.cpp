// A stage whose copy stream never completes (a hung kernel on a real GPU, a stalled stream on
// the emulated one) cannot hang its owner: the destructor gives up after config.close_timeout,
// hands the steps in flight to the sink as failed and counts the stream abandoned; and a case
// that fails under a stalled stream ends, failing, instead of waiting for the test runner.
#define CATCH_CONFIG_ENABLE_BENCHMARKING  // as tests/catch_main.cpp
#include "emulated_guards.hpp"
#include "gpu_stage_support.hpp"

#include <poll.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <future>
#include <optional>
#include <sstream>
#include <string>

extern char** environ;

using namespace gpu_test;

namespace {

constexpr const char* fails_on_purpose_tag = "[emulated_fails_on_purpose]";

// Two cases shaped like the one that once hung CI: a REQUIRE fails while the stage's copy
// stream is stalled. Hidden ([.]); the test after them runs them in a child process.
void capture_then_fail_under_stall(bool with_guard)
{
    const int rows = 4, v = 4096;
    // Before the reset: cudaFree synchronizes the device, stalled streams included.
    const RandomStep step(LogitDType::f32, rows, v, 131);
    DeviceReset restore;  // runs after the stage's destructor: it is no help there
    Collector c;
    SnapshotConfig cfg = config_for(rows, v);
    cfg.watchdog = 50ms;
    cfg.close_timeout = 300ms;
    jsonlw::emu::stall_new_streams(true, jsonlw::emu::StallAt::next_host_func);
    auto stage = SnapshotStage::create(cfg, Backend::cuda, c.sink());
    jsonlw::emu::stall_new_streams(false);
    std::optional<StallsReleased> unstall;
    if (with_guard) unstall.emplace();
    std::vector<RowMeta> meta(rows);
    REQUIRE(stage->capture(step.view(0), step.device.ids(), meta, nullptr) == CaptureResult::enqueued);
    REQUIRE(stage->drain(30s));
    REQUIRE(c.count() == 2);  // fails on purpose: one step was captured
}

}  // namespace

TEST_CASE("Emulated GPU (child): a REQUIRE fails under a stalled stream, the stall guarded", "[.][gpu][emulated][emulated_fails_on_purpose]")
{
    capture_then_fail_under_stall(true);
}

TEST_CASE("Emulated GPU (child): a REQUIRE fails under a stalled stream, nothing releases it", "[.][gpu][emulated][emulated_fails_on_purpose]")
{
    capture_then_fail_under_stall(false);
}

TEST_CASE("Emulated GPU: cases that fail under a stalled stream end, failing, instead of hanging", "[gpu][emulated]")
{
    char out_path[] = "/tmp/jsonlw-fails-on-purpose-XXXXXX";
    const int out_fd = ::mkstemp(out_path);
    REQUIRE(out_fd >= 0);
    const ScopeExit remove_out([&] {
        ::close(out_fd);
        ::unlink(out_path);
    });
    posix_spawn_file_actions_t actions;
    REQUIRE(::posix_spawn_file_actions_init(&actions) == 0);
    const ScopeExit free_actions([&] { ::posix_spawn_file_actions_destroy(&actions); });
    REQUIRE(::posix_spawn_file_actions_adddup2(&actions, out_fd, STDOUT_FILENO) == 0);
    REQUIRE(::posix_spawn_file_actions_adddup2(&actions, out_fd, STDERR_FILENO) == 0);
    std::string self = "/proc/self/exe", tag = fails_on_purpose_tag;
    char* argv[] = {self.data(), tag.data(), nullptr};
    pid_t pid = -1;
    REQUIRE(::posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv, environ) == 0);

    // Wait for the child's exit with a generous deadline (a hang is what this case catches):
    // a pidfd becomes readable when the process ends (pidfd_open(2)).
    const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    REQUIRE(pidfd >= 0);
    pollfd pfd{pidfd, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, 60'000);
    ::close(pidfd);
    if (ready != 1) ::kill(pid, SIGKILL);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    std::ifstream in(out_path);
    std::stringstream text;
    text << in.rdbuf();
    INFO("the child's output:\n" << text.str());
    REQUIRE(ready == 1);  // ended within 60 s; each stage gives up after its 300 ms close_timeout
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 2);  // Catch2: the number of failed test cases
    CHECK(text.str().find("0 passed | 2 failed") != std::string::npos);
    CHECK(text.str().find("c.count() == 2") != std::string::npos);
}

TEST_CASE("Emulated GPU: destroying a stage whose copy stream never completes returns after close_timeout", "[gpu][emulated]")
{
    DeviceReset restore;  // releases the stream after the stage gave up on it (a late copy, a late host function)
    const int rows = 4, v = 4096;
    const RandomStep step(LogitDType::f32, rows, v, 141);
    Collector c;
    StallsReleased unstall;  // after the stage gave up: step's cudaFree synchronizes the device
    SnapshotConfig cfg = config_for(rows, v);
    cfg.watchdog = 50ms;
    cfg.close_timeout = 300ms;
    // The copy stream stops before its first item: the step's copy, event and host function
    // never run, as behind a kernel that never ends.
    std::unique_ptr<SnapshotStage> stage;
    {
        const ScopeExit stop_stalling([] { jsonlw::emu::stall_new_streams(false); });
        jsonlw::emu::stall_new_streams(true, jsonlw::emu::StallAt::next_item);
        stage = SnapshotStage::create(cfg, Backend::cuda, c.sink());
    }
    std::vector<RowMeta> meta(rows);
    REQUIRE(stage->capture(step.view(0), step.device.ids(), meta, nullptr) == CaptureResult::enqueued);
    CHECK_FALSE(stage->drain(100ms));  // the watchdog finds the copy not done, every time
    CHECK(c.count() == 0);

    const std::uint64_t abandoned_before = abandoned_streams();
    const auto t0 = std::chrono::steady_clock::now();
    auto destroyed = std::async(std::launch::async, [&stage] { stage.reset(); });
    // Generous for a loaded machine; the stated bound is close_timeout.
    REQUIRE(destroyed.wait_for(cfg.close_timeout + 10s) == std::future_status::ready);
    const auto waited = std::chrono::steady_clock::now() - t0;
    CHECK(waited >= cfg.close_timeout);  // it did wait for the stream before giving up
    CHECK(abandoned_streams() - abandoned_before == 1);
    REQUIRE(c.count() == 1);  // the step in flight, handed on as failed
    CHECK(c.failed[0]);
}
