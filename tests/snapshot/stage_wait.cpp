// The stage under a slow consumer: the bounded slot wait (SnapshotConfig::slot_wait) that
// stalls the decode loop instead of dropping, its counters, and the CPU backend's row workers
// running niced so the threads that drain the results keep the CPU.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include <jsonlw/snapshot/stage.hpp>

#include "stage_support.hpp"
#include "wait.hpp"

#include <sys/resource.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace jsonlw::snapshot;
using namespace std::chrono_literals;
using jsonlw_test::Keeper;
using jsonlw_test::Step;

namespace {

SnapshotConfig two_slots(std::chrono::microseconds wait)
{
    SnapshotConfig c = jsonlw_test::cpu_config(5, 16, 1024, 2);
    c.slot_wait = wait;
    return c;
}

// /proc/self/task/TID/stat field 19 (nice) of every thread named `name`.
std::vector<int> nice_of_threads(const std::string& name)
{
    std::vector<int> out;
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
        std::ifstream comm(e.path() / "comm");
        std::string n;
        std::getline(comm, n);
        if (n != name) continue;
        std::ifstream stat(e.path() / "stat");
        std::string all((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
        std::istringstream rest(all.substr(all.rfind(')') + 2));  // after "pid (comm) "
        std::string field;
        for (int i = 3; i <= 19 && rest >> field; ++i)
            if (i == 19) out.push_back(std::stoi(field));
    }
    return out;
}

}  // namespace

TEST_CASE("by default a full ring drops the step at once and nothing counts as a wait", "[snapshot][stage][wait]")
{
    Keeper keep;
    auto stage = SnapshotStage::create(two_slots(0us), Backend::cpu, keep.sink());
    const Step s(4, 100, 1);
    REQUIRE(s.capture(*stage) == CaptureResult::enqueued);
    REQUIRE(s.capture(*stage) == CaptureResult::enqueued);
    CHECK(s.capture(*stage) == CaptureResult::dropped);
    const SnapshotStats st = stage->stats();
    CHECK(st.dropped_steps == 1);
    CHECK(st.slot_waits == 0);
    CHECK(st.slot_wait_timeouts == 0);
    CHECK(st.slot_wait_us == 0);
    CHECK(st.waiting_for_slot == 0);
}

TEST_CASE("with a slot wait, a capture that finds the ring full waits for the slot a consumer releases and enqueues", "[snapshot][stage][wait][threads]")
{
    Keeper keep;
    auto stage = SnapshotStage::create(two_slots(std::chrono::seconds(10)), Backend::cpu, keep.sink());
    const Step s(4, 100, 2);
    REQUIRE(s.capture(*stage) == CaptureResult::enqueued);
    REQUIRE(s.capture(*stage) == CaptureResult::enqueued);

    // The consumer lets the oldest slot go only once the capture is seen waiting for it.
    std::thread consumer([&] {
        REQUIRE(jsonlw_test::wait_until([&] { return stage->stats().waiting_for_slot == 1; }));
        keep.release(0);
    });
    const CaptureResult third = s.capture(*stage);
    consumer.join();
    CHECK(third == CaptureResult::enqueued);
    const SnapshotStats st = stage->stats();
    CHECK(st.captured_steps == 3);
    CHECK(st.dropped_steps == 0);
    CHECK(st.slot_waits == 1);
    CHECK(st.slot_wait_timeouts == 0);
    CHECK(st.waiting_for_slot == 0);
    REQUIRE(keep.batches.size() == 3);
    CHECK(keep.batches[2].batch_seq == 2);
    CHECK(keep.batches[2].gap_before == 0);
}

TEST_CASE("with a slot wait and no release, the capture gives up after the wait, drops the step and counts the timeout", "[snapshot][stage][wait]")
{
    Keeper keep;
    auto stage = SnapshotStage::create(two_slots(30ms), Backend::cpu, keep.sink());
    const Step s(4, 100, 3);
    REQUIRE(s.capture(*stage) == CaptureResult::enqueued);
    REQUIRE(s.capture(*stage) == CaptureResult::enqueued);
    CHECK(s.capture(*stage) == CaptureResult::dropped);
    CHECK(s.capture(*stage) == CaptureResult::dropped);
    SnapshotStats st = stage->stats();
    CHECK(st.dropped_steps == 2);
    CHECK(st.dropped_rows == 8);
    CHECK(st.slot_waits == 2);
    CHECK(st.slot_wait_timeouts == 2);
    CHECK(st.slot_wait_us >= 2 * 30'000);  // each waited the whole slot_wait
    CHECK(st.waiting_for_slot == 0);

    // Once the slot is free, the next capture takes it without waiting, and says what was lost.
    keep.release(0);
    REQUIRE(s.capture(*stage) == CaptureResult::enqueued);
    st = stage->stats();
    CHECK(st.slot_waits == 2);
    CHECK(keep.batches.back().gap_before == 2);
}

TEST_CASE("a slot wait out of range or a worker nice value out of range is refused", "[snapshot][stage][args]")
{
    const auto sink = [](SnapshotBatch&&) {};
    SnapshotConfig c;
    c.slot_wait = -1us;
    CHECK_THROWS_AS(SnapshotStage::create(c, Backend::cpu, sink), std::invalid_argument);
    c.slot_wait = std::chrono::seconds(11);
    CHECK_THROWS_AS(SnapshotStage::create(c, Backend::cpu, sink), std::invalid_argument);
    c.slot_wait = std::chrono::seconds(10);
    CHECK(SnapshotStage::create(c, Backend::cpu, sink) != nullptr);
    c = SnapshotConfig{};
    c.cpu_worker_nice = 20;
    CHECK_THROWS_AS(SnapshotStage::create(c, Backend::cpu, sink), std::invalid_argument);
    c.cpu_worker_nice = -1;
    CHECK_THROWS_AS(SnapshotStage::create(c, Backend::cpu, sink), std::invalid_argument);
}

TEST_CASE("the CPU backend's row workers are named and run at the configured nice above the process", "[snapshot][stage][threads]")
{
    errno = 0;
    const int base = ::getpriority(PRIO_PROCESS, 0);
    REQUIRE(errno == 0);
    SnapshotConfig c = two_slots(0us);
    c.cpu_threads = 3;  // the capturing thread and two workers
    c.cpu_worker_nice = 7;
    Keeper keep;
    auto stage = SnapshotStage::create(c, Backend::cpu, keep.sink());
    // The workers set their name and priority when they start; a parallel step has them run.
    const Step s(16, 256, 4);
    REQUIRE(s.capture(*stage) == CaptureResult::enqueued);
    const int want = std::min(19, base + 7);
    REQUIRE(jsonlw_test::wait_until([&] {
        return nice_of_threads("jsonlw-rows-1") == std::vector<int>{want} &&
               nice_of_threads("jsonlw-rows-2") == std::vector<int>{want};
    }));
    // The capturing thread (this one) keeps its priority.
    CHECK(::getpriority(PRIO_PROCESS, 0) == base);
}
