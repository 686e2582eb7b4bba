// The emulated CUDA runtime on its own: stream order and threads, events, cross-stream waits,
// the legacy stream's implicit synchronization, stalls, sticky errors, guard pages, copy range
// checks and the injected faults. Waits are on promises with generous deadlines; a "pending"
// check is only made where a stall makes it certain.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <jsonlw_emu/faults.hpp>
#include <jsonlw_emu/runtime_hooks.hpp>

#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
namespace emu = jsonlw::emu;

namespace {

// Every scenario starts and ends on a clean device, so a failed one leaves no stall behind.
struct CleanDevice {
    CleanDevice() { emu::reset_device(); }
    ~CleanDevice() { emu::reset_device(); }
};

// A stream owned by one scenario (non-blocking unless asked), destroyed at its end.
struct Stream {
    cudaStream_t s = nullptr;
    explicit Stream(unsigned flags = cudaStreamNonBlocking)
    {
        REQUIRE(cudaStreamCreateWithFlags(&s, flags) == cudaSuccess);
    }
    ~Stream() { (void)cudaStreamDestroy(s); }
};

// A host function that reports the thread it ran on.
struct Signal {
    std::promise<std::thread::id> promise;
    std::future<std::thread::id> future = promise.get_future();

    static void CUDART_CB fire(void* self) { static_cast<Signal*>(self)->promise.set_value(std::this_thread::get_id()); }
    cudaError_t launch(cudaStream_t s) { return cudaLaunchHostFunc(s, fire, this); }
    bool arrives() { return future.wait_for(10s) == std::future_status::ready; }
    bool pending() { return future.wait_for(0s) != std::future_status::ready; }
};

// What ran, in which order, on which thread; filled from stream threads under its mutex.
struct Log {
    std::mutex m;
    std::vector<int> order;
    std::vector<std::thread::id> threads;
    void add(int i)
    {
        std::lock_guard lock(m);
        order.push_back(i);
        threads.push_back(std::this_thread::get_id());
    }
};

// One host function's argument: where to log and its position.
struct Entry {
    Log* log;
    int i;
};

void CUDART_CB log_entry(void* p)
{
    auto* e = static_cast<Entry*>(p);
    e->log->add(e->i);
}

// Whether a forked child reading *addr dies of SIGSEGV (Catch2's handler is dropped first).
bool read_dies_of_segv(const void* addr)
{
    const pid_t pid = fork();
    if (pid == 0) {
        std::signal(SIGSEGV, SIG_DFL);
        (void)*static_cast<const volatile char*>(addr);
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV;
}

}  // namespace

TEST_CASE("Kernels, copies and host functions on one stream run in enqueue order on one stream thread",
          "[emu][runtime]")
{
    CleanDevice clean;
    Stream s;
    Log log;
    std::vector<Entry> entries;
    entries.reserve(60);
    void* d = nullptr;
    REQUIRE(cudaMalloc(&d, 4) == cudaSuccess);
    int host_value = 0;
    for (int i = 0; i < 60; ++i) {
        if (i % 3 == 0) {
            entries.push_back(Entry{&log, i});
            REQUIRE(cudaLaunchHostFunc(s.s, log_entry, &entries.back()) == cudaSuccess);
        } else if (i % 3 == 1) {
            REQUIRE(emu::enqueue_kernel(s.s, [&log, i, d] {
                        std::memcpy(d, &i, 4);
                        log.add(i);
                        return cudaSuccess;
                    }) == cudaSuccess);
        } else {
            REQUIRE(cudaMemcpyAsync(&host_value, d, 4, cudaMemcpyDeviceToHost, s.s) == cudaSuccess);
            REQUIRE(host_value == i - 1);  // into pageable memory: landed when the call returns
            log.add(i);
        }
    }
    REQUIRE(cudaStreamSynchronize(s.s) == cudaSuccess);
    REQUIRE(cudaStreamQuery(s.s) == cudaSuccess);
    std::vector<int> want(60);
    for (int i = 0; i < 60; ++i) want[std::size_t(i)] = i;
    CHECK(log.order == want);
    std::thread::id stream_thread = log.threads[0];
    CHECK(stream_thread != std::this_thread::get_id());
    for (int i = 0; i < 60; ++i)
        if (i % 3 != 2) CHECK(log.threads[std::size_t(i)] == stream_thread);
    REQUIRE(cudaFree(d) == cudaSuccess);
}

TEST_CASE("A host function runs on the stream thread and its CUDA calls fail with cudaErrorNotPermitted",
          "[emu][runtime]")
{
    CleanDevice clean;
    Stream s;
    struct Probe {
        std::promise<cudaError_t> result;
    } probe;
    REQUIRE(cudaLaunchHostFunc(
                s.s,
                [](void* p) {
                    int n = 0;
                    static_cast<Probe*>(p)->result.set_value(cudaGetDeviceCount(&n));
                },
                &probe) == cudaSuccess);
    auto f = probe.result.get_future();
    REQUIRE(f.wait_for(10s) == std::future_status::ready);
    CHECK(f.get() == cudaErrorNotPermitted);
    int n = 0;
    CHECK(cudaGetDeviceCount(&n) == cudaSuccess);  // this thread is unaffected
    CHECK(n == 1);
}

TEST_CASE("An event is not ready until its stream passes the recorded point; one never recorded is complete",
          "[emu][runtime]")
{
    CleanDevice clean;
    Stream s;
    cudaEvent_t never, e;
    REQUIRE(cudaEventCreate(&never) == cudaSuccess);
    REQUIRE(cudaEventCreateWithFlags(&e, cudaEventDisableTiming) == cudaSuccess);
    CHECK(cudaEventQuery(never) == cudaSuccess);
    CHECK(cudaEventSynchronize(never) == cudaSuccess);

    REQUIRE(emu::stall_stream(s.s));
    REQUIRE(cudaEventRecord(e, s.s) == cudaSuccess);
    CHECK(cudaEventQuery(e) == cudaErrorNotReady);
    CHECK(cudaStreamQuery(s.s) == cudaErrorNotReady);
    CHECK(cudaGetLastError() == cudaSuccess);  // not ready is a status, not an error
    REQUIRE(emu::release_stream(s.s));
    CHECK(cudaEventSynchronize(e) == cudaSuccess);
    CHECK(cudaEventQuery(e) == cudaSuccess);
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, never, e) == cudaErrorInvalidResourceHandle);  // timing off, never recorded
    CHECK(cudaEventDestroy(e) == cudaSuccess);
    CHECK(cudaEventDestroy(never) == cudaSuccess);
    CHECK(cudaEventQuery(e) == cudaErrorInvalidResourceHandle);
}

TEST_CASE("Elapsed time between two timed events on one stream is measured in order", "[emu][runtime]")
{
    CleanDevice clean;
    Stream s;
    cudaEvent_t a, b;
    REQUIRE(cudaEventCreate(&a) == cudaSuccess);
    REQUIRE(cudaEventCreate(&b) == cudaSuccess);
    REQUIRE(emu::stall_stream(s.s));
    REQUIRE(cudaEventRecord(a, s.s) == cudaSuccess);
    REQUIRE(cudaEventRecord(b, s.s) == cudaSuccess);
    float ms = -1;
    CHECK(cudaEventElapsedTime(&ms, a, b) == cudaErrorNotReady);
    REQUIRE(emu::release_stream(s.s));
    REQUIRE(cudaEventSynchronize(b) == cudaSuccess);
    REQUIRE(cudaEventElapsedTime(&ms, a, b) == cudaSuccess);
    CHECK(ms >= 0.0f);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
}

TEST_CASE("Work behind cudaStreamWaitEvent waits for the other stream's recorded point", "[emu][runtime]")
{
    CleanDevice clean;
    Stream a, b;
    cudaEvent_t e;
    REQUIRE(cudaEventCreateWithFlags(&e, cudaEventDisableTiming) == cudaSuccess);
    std::atomic<int> written{0};
    REQUIRE(emu::stall_stream(a.s));
    REQUIRE(emu::enqueue_kernel(a.s, [&] {
                written = 1;
                return cudaSuccess;
            }) == cudaSuccess);
    REQUIRE(cudaEventRecord(e, a.s) == cudaSuccess);
    REQUIRE(cudaStreamWaitEvent(b.s, e, 0) == cudaSuccess);
    int seen = -1;
    REQUIRE(emu::enqueue_kernel(b.s, [&] {
                seen = written;
                return cudaSuccess;
            }) == cudaSuccess);
    Signal after;
    REQUIRE(after.launch(b.s) == cudaSuccess);
    CHECK(after.pending());
    CHECK(cudaStreamQuery(b.s) == cudaErrorNotReady);
    // A later record into e does not move the point b already waits for.
    Stream c;
    REQUIRE(cudaEventRecord(e, c.s) == cudaSuccess);
    REQUIRE(cudaEventSynchronize(e) == cudaSuccess);
    CHECK(after.pending());

    REQUIRE(emu::release_stream(a.s));
    REQUIRE(after.arrives());
    CHECK(seen == 1);
    cudaEventDestroy(e);
}

TEST_CASE("The legacy stream waits for blocking streams and they for it; non-blocking streams wait for neither",
          "[emu][runtime]")
{
    CleanDevice clean;
    Stream blocking(cudaStreamDefault), nonblocking(cudaStreamNonBlocking);

    // A stalled non-blocking stream holds nothing on the legacy stream.
    REQUIRE(emu::stall_stream(nonblocking.s));
    Signal held_nb;
    REQUIRE(held_nb.launch(nonblocking.s) == cudaSuccess);
    Signal legacy1;
    REQUIRE(legacy1.launch(nullptr) == cudaSuccess);
    CHECK(legacy1.arrives());
    CHECK(held_nb.pending());

    // A stalled blocking stream holds later legacy work.
    REQUIRE(emu::stall_stream(blocking.s));
    Signal held_b;
    REQUIRE(held_b.launch(blocking.s) == cudaSuccess);
    Signal legacy2;
    REQUIRE(legacy2.launch(nullptr) == cudaSuccess);
    CHECK(legacy2.pending());
    CHECK(cudaStreamQuery(nullptr) == cudaErrorNotReady);
    REQUIRE(emu::release_stream(blocking.s));
    CHECK(held_b.arrives());
    CHECK(legacy2.arrives());

    // A stalled legacy stream holds later blocking-stream work, not non-blocking work.
    REQUIRE(emu::release_stream(nonblocking.s));
    REQUIRE(held_nb.arrives());
    REQUIRE(emu::stall_stream(cudaStreamLegacy));
    Signal held_legacy;
    REQUIRE(held_legacy.launch(nullptr) == cudaSuccess);
    Signal b2, nb2;
    REQUIRE(b2.launch(blocking.s) == cudaSuccess);
    REQUIRE(nb2.launch(nonblocking.s) == cudaSuccess);
    CHECK(nb2.arrives());
    CHECK(b2.pending());
    REQUIRE(emu::release_stream(nullptr));
    CHECK(held_legacy.arrives());
    CHECK(b2.arrives());
}

TEST_CASE("A stalled stream holds its next item until released; stalled at host functions it runs the rest",
          "[emu][runtime]")
{
    CleanDevice clean;
    Stream s;
    SECTION("next item")
    {
        std::atomic<bool> ran{false};
        REQUIRE(emu::stall_stream(s.s));
        REQUIRE(emu::enqueue_kernel(s.s, [&] {
                    ran = true;
                    return cudaSuccess;
                }) == cudaSuccess);
        Signal sig;
        REQUIRE(sig.launch(s.s) == cudaSuccess);
        CHECK(sig.pending());
        CHECK(!ran);
        REQUIRE(emu::release_stream(s.s));
        CHECK(sig.arrives());
        CHECK(ran);
    }
    SECTION("next host function")
    {
        void* pinned = nullptr;
        void* d = nullptr;
        REQUIRE(cudaHostAlloc(&pinned, 8, cudaHostAllocPortable) == cudaSuccess);
        REQUIRE(cudaMalloc(&d, 8) == cudaSuccess);
        REQUIRE(cudaMemset(d, 0x2a, 8) == cudaSuccess);
        cudaEvent_t copied;
        REQUIRE(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming) == cudaSuccess);
        REQUIRE(emu::stall_stream(s.s, emu::StallAt::next_host_func));
        REQUIRE(cudaMemcpyAsync(pinned, d, 8, cudaMemcpyDeviceToHost, s.s) == cudaSuccess);
        REQUIRE(cudaEventRecord(copied, s.s) == cudaSuccess);
        Signal sig;
        REQUIRE(sig.launch(s.s) == cudaSuccess);
        REQUIRE(cudaEventSynchronize(copied) == cudaSuccess);
        CHECK(static_cast<unsigned char*>(pinned)[7] == 0x2a);
        CHECK(sig.pending());
        CHECK(cudaStreamQuery(s.s) == cudaErrorNotReady);
        REQUIRE(emu::release_stream(s.s));
        CHECK(sig.arrives());
        cudaEventDestroy(copied);
        cudaFree(d);
        cudaFreeHost(pinned);
    }
}

TEST_CASE("Streams created while stall_new_streams is on start stalled; release_all_streams frees them",
          "[emu][runtime]")
{
    CleanDevice clean;
    emu::stall_new_streams(true);
    Stream held;
    emu::stall_new_streams(false);
    Stream free_running;
    CHECK(emu::last_created_stream() == free_running.s);
    Signal a, b;
    REQUIRE(a.launch(held.s) == cudaSuccess);
    REQUIRE(b.launch(free_running.s) == cudaSuccess);
    CHECK(b.arrives());
    CHECK(a.pending());
    emu::release_all_streams();
    CHECK(a.arrives());
}

TEST_CASE("A destroyed stream's handle is invalid at once and its queued work still runs", "[emu][runtime]")
{
    CleanDevice clean;
    cudaStream_t s;
    REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
    REQUIRE(emu::stall_stream(s));
    Signal sig;
    REQUIRE(sig.launch(s) == cudaSuccess);
    REQUIRE(cudaStreamDestroy(s) == cudaSuccess);
    CHECK(cudaStreamQuery(s) == cudaErrorInvalidResourceHandle);
    CHECK(cudaGetLastError() == cudaErrorInvalidResourceHandle);
    CHECK(sig.pending());
    emu::release_all_streams();
    CHECK(sig.arrives());
}

TEST_CASE("A kernel's error is sticky: later work is skipped and every call returns it until reset",
          "[emu][runtime]")
{
    CleanDevice clean;
    Stream s;
    std::atomic<bool> later_ran{false};
    Signal host_fn;
    REQUIRE(emu::stall_stream(s.s));
    REQUIRE(emu::enqueue_kernel(s.s, [] { return cudaErrorIllegalAddress; }) == cudaSuccess);
    REQUIRE(emu::enqueue_kernel(s.s, [&] {
                later_ran = true;
                return cudaSuccess;
            }) == cudaSuccess);
    REQUIRE(host_fn.launch(s.s) == cudaSuccess);
    REQUIRE(emu::release_stream(s.s));
    CHECK(cudaStreamSynchronize(s.s) == cudaErrorIllegalAddress);
    CHECK(!later_ran);
    CHECK(host_fn.pending());  // a failed context runs no host function
    void* p = nullptr;
    CHECK(cudaMalloc(&p, 16) == cudaErrorIllegalAddress);
    CHECK(p == nullptr);
    CHECK(emu::enqueue_kernel(s.s, [] { return cudaSuccess; }) == cudaErrorIllegalAddress);
    cudaEvent_t e = nullptr;
    CHECK(cudaEventCreate(&e) == cudaErrorIllegalAddress);
    CHECK(cudaGetLastError() == cudaErrorIllegalAddress);
    CHECK(cudaGetLastError() == cudaErrorIllegalAddress);
    CHECK(cudaPeekAtLastError() == cudaErrorIllegalAddress);
    CHECK(std::string(cudaGetErrorName(cudaErrorIllegalAddress)) == "cudaErrorIllegalAddress");
    CHECK(std::string(cudaGetErrorString(cudaErrorIllegalAddress)) == "an illegal memory access was encountered");

    CHECK(cudaDeviceReset() == cudaSuccess);
    CHECK(cudaGetLastError() == cudaSuccess);
    CHECK(cudaMalloc(&p, 16) == cudaSuccess);
    CHECK(cudaFree(p) == cudaSuccess);
}

TEST_CASE("fault_next_kernel makes the next launched kernel end with that error when the stream runs it",
          "[emu][runtime]")
{
    CleanDevice clean;
    Stream s;
    std::atomic<bool> ran{false};
    emu::fault_next_kernel(cudaErrorLaunchFailure);
    CHECK(emu::enqueue_kernel(s.s, [&] {
              ran = true;
              return cudaSuccess;
          }) == cudaSuccess);
    CHECK(cudaStreamSynchronize(s.s) == cudaErrorLaunchFailure);
    CHECK(!ran);
    CHECK(cudaDeviceSynchronize() == cudaErrorLaunchFailure);
}

TEST_CASE("fail_next_launch refuses one launch with that error, enqueues nothing and is not sticky",
          "[emu][runtime]")
{
    CleanDevice clean;
    Stream s;
    std::atomic<int> runs{0};
    auto work = [&] {
        ++runs;
        return cudaSuccess;
    };
    emu::fail_next_launch(cudaErrorInvalidConfiguration);
    CHECK(emu::enqueue_kernel(s.s, work) == cudaErrorInvalidConfiguration);
    CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
    CHECK(cudaGetLastError() == cudaSuccess);
    CHECK(emu::enqueue_kernel(s.s, work) == cudaSuccess);
    CHECK(cudaStreamSynchronize(s.s) == cudaSuccess);
    CHECK(runs == 1);
    CHECK(emu::enqueue_kernel(reinterpret_cast<cudaStream_t>(&runs), work) == cudaErrorInvalidResourceHandle);
    emu::set_last_error(cudaErrorInvalidConfiguration);
    CHECK(cudaPeekAtLastError() == cudaErrorInvalidConfiguration);
    CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
}

TEST_CASE("Reading past the end of a device allocation, or a page before it, kills the reader with SIGSEGV",
          "[emu][runtime]")
{
    CleanDevice clean;
    const std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
    char* p = nullptr;
    REQUIRE(cudaMalloc(reinterpret_cast<void**>(&p), 64) == cudaSuccess);
    CHECK(reinterpret_cast<std::uintptr_t>(p) % 16 == 0);
    CHECK(!read_dies_of_segv(p + 63));
    CHECK(read_dies_of_segv(p + 64));
    CHECK(read_dies_of_segv(p - page));

    // The user range's end is rounded up to 16 bytes: 100 -> 112.
    char* q = nullptr;
    REQUIRE(cudaMalloc(reinterpret_cast<void**>(&q), 100) == cudaSuccess);
    CHECK(!read_dies_of_segv(q + 111));
    CHECK(read_dies_of_segv(q + 112));

    const emu::AllocationInfo past = emu::find_allocation(p + 64);
    CHECK(past.found);
    CHECK(past.base == p);
    CHECK(past.size == 64);
    CHECK(emu::find_allocation(p - page).base == p);
    CHECK(emu::find_allocation(q + 5).size == 100);
    int local = 0;
    CHECK(!emu::find_allocation(&local).found);
    REQUIRE(cudaFree(p) == cudaSuccess);
    CHECK(!emu::find_allocation(p).found);
    REQUIRE(cudaFree(q) == cudaSuccess);
}

TEST_CASE("Copies whose device range overruns its allocation fail with cudaErrorInvalidValue, not sticky",
          "[emu][runtime]")
{
    CleanDevice clean;
    void* d = nullptr;
    REQUIRE(cudaMalloc(&d, 100) == cudaSuccess);
    std::vector<char> h(200, 'x');
    auto* dc = static_cast<char*>(d);
    CHECK(cudaMemcpy(d, h.data(), 100, cudaMemcpyHostToDevice) == cudaSuccess);
    CHECK(cudaMemcpy(d, h.data(), 101, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);
    CHECK(cudaGetLastError() == cudaErrorInvalidValue);
    CHECK(cudaGetLastError() == cudaSuccess);
    CHECK(cudaMemcpy(dc + 1, h.data(), 100, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);
    CHECK(cudaMemcpy(h.data(), d, 101, cudaMemcpyDeviceToHost) == cudaErrorInvalidValue);
    CHECK(cudaMemcpy(h.data(), h.data() + 100, 10, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);
    CHECK(cudaMemcpyAsync(dc + 50, dc, 51, cudaMemcpyDeviceToDevice, nullptr) == cudaErrorInvalidValue);
    // 2D: the last row ends at (height - 1) * pitch + width.
    CHECK(cudaMemcpy2DAsync(h.data(), 10, d, 10, 10, 10, cudaMemcpyDeviceToHost, nullptr) == cudaSuccess);
    CHECK(cudaMemcpy2DAsync(h.data(), 10, d, 10, 10, 11, cudaMemcpyDeviceToHost, nullptr) == cudaErrorInvalidValue);
    CHECK(cudaMemcpy2DAsync(h.data(), 20, d, 10, 4, 10, cudaMemcpyDeviceToHost, nullptr) == cudaSuccess);
    CHECK(cudaMemcpy2D(h.data(), 10, d, 4, 8, 2, cudaMemcpyDeviceToHost) == cudaErrorInvalidPitchValue);
    CHECK(cudaMemset(dc + 99, 0, 2) == cudaErrorInvalidValue);
    CHECK(cudaMemcpy(h.data(), d, 100, cudaMemcpyDefault) == cudaSuccess);
    CHECK(cudaMemcpy(h.data(), d, 101, cudaMemcpyDefault) == cudaErrorInvalidValue);

    int local = 0;
    CHECK(cudaFree(&local) == cudaErrorInvalidValue);
    CHECK(cudaFree(dc + 16) == cudaErrorInvalidValue);
    CHECK(cudaFreeHost(&local) == cudaErrorInvalidValue);
    CHECK(cudaFree(d) == cudaSuccess);
    CHECK(cudaFree(d) == cudaErrorInvalidValue);
    CHECK(cudaFree(nullptr) == cudaSuccess);
    CHECK(cudaDeviceSynchronize() == cudaSuccess);
}

TEST_CASE("An async copy from pageable memory is staged at the call, so the caller may reuse its buffer",
          "[emu][runtime]")
{
    CleanDevice clean;
    Stream s;
    int* d = nullptr;
    REQUIRE(cudaMalloc(reinterpret_cast<void**>(&d), 4 * sizeof(int)) == cudaSuccess);
    std::vector<int> src{1, 2, 3, 4};
    REQUIRE(emu::stall_stream(s.s));
    REQUIRE(cudaMemcpyAsync(d, src.data(), 16, cudaMemcpyHostToDevice, s.s) == cudaSuccess);
    src.assign(4, 9);
    REQUIRE(emu::release_stream(s.s));
    REQUIRE(cudaStreamSynchronize(s.s) == cudaSuccess);
    std::vector<int> back(4);
    REQUIRE(cudaMemcpy(back.data(), d, 16, cudaMemcpyDeviceToHost) == cudaSuccess);
    CHECK(back == std::vector<int>{1, 2, 3, 4});
    REQUIRE(cudaFree(d) == cudaSuccess);
}

TEST_CASE("The allocation after n successful ones fails once with the injected error", "[emu][runtime]")
{
    CleanDevice clean;
    void* a = nullptr;
    void* b = nullptr;
    void* c = nullptr;
    void* h = nullptr;
    emu::fail_allocation_after(2);
    REQUIRE(cudaMalloc(&a, 8) == cudaSuccess);
    REQUIRE(cudaMalloc(&b, 8) == cudaSuccess);
    CHECK(cudaMalloc(&c, 8) == cudaErrorMemoryAllocation);
    CHECK(c == nullptr);
    CHECK(cudaGetLastError() == cudaErrorMemoryAllocation);
    CHECK(cudaMalloc(&c, 8) == cudaSuccess);

    emu::fail_allocation_after(0, emu::Memory::host, cudaErrorInvalidValue);
    void* d = nullptr;
    CHECK(cudaMalloc(&d, 8) == cudaSuccess);  // device allocations unaffected
    CHECK(cudaHostAlloc(&h, 64, cudaHostAllocPortable) == cudaErrorInvalidValue);
    CHECK(cudaMallocHost(&h, 64) == cudaSuccess);
    CHECK(cudaFreeHost(h) == cudaSuccess);
    for (void* p : {a, b, c, d}) CHECK(cudaFree(p) == cudaSuccess);
}

TEST_CASE("With the device count set to 0 the runtime reports cudaErrorNoDevice; the SM count is settable",
          "[emu][runtime]")
{
    CleanDevice clean;
    int sms = 0;
    REQUIRE(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) == cudaSuccess);
    CHECK(sms == 132);
    emu::set_sm_count(8);
    REQUIRE(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) == cudaSuccess);
    CHECK(sms == 8);

    emu::set_device_count(0);
    int n = -1;
    CHECK(cudaGetDeviceCount(&n) == cudaErrorNoDevice);
    CHECK(n == 0);
    void* p = nullptr;
    CHECK(cudaMalloc(&p, 8) == cudaErrorNoDevice);
    int dev = -1;
    CHECK(cudaGetDevice(&dev) == cudaErrorNoDevice);
    CHECK(std::string(cudaGetErrorName(cudaErrorNoDevice)) == "cudaErrorNoDevice");

    emu::reset_device();
    CHECK(cudaGetDeviceCount(&n) == cudaSuccess);
    CHECK(n == 1);
    REQUIRE(cudaGetDevice(&dev) == cudaSuccess);
    CHECK(dev == 0);
    CHECK(cudaSetDevice(1) == cudaErrorInvalidDevice);
    REQUIRE(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) == cudaSuccess);
    CHECK(sms == 132);
}
