// RawOutputWriter's memory on the hook path: a written record's buffers go back to the hook
// (RecordShells), so in steady state an output costs its caller's thread only its two
// bookkeeping nodes (the pending map's and the LRU list's) and the writer's I/O thread frees
// nothing that thread allocated: before, each output cost 14 allocations on the caller's thread and 3 frees on the
// I/O thread, which contended for the caller's malloc arena. This TU replaces the global
// operator new and delete with ones that count.
#include <catch2/catch.hpp>

#include "raw_output_support.hpp"

#include <sys/prctl.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

using namespace jsonlw_test;
using namespace raw_output_test;

namespace {

thread_local std::uint64_t t_allocations = 0;
thread_local char t_tag;  // its address tells the threads apart
std::atomic<bool> g_counting_frees{false};
std::atomic<std::uint64_t> g_io_foreign_frees{0};
thread_local int t_is_io = -1;  // -1: not looked up yet

// Each block carries, just before the pointer returned, the address of its allocating
// thread's t_tag, and in the word before that the offset back to what malloc returned.
void* counted(std::size_t n, std::size_t align = 0)
{
    ++t_allocations;
    const std::size_t header = std::max<std::size_t>(16, align);
    void* base = align == 0 ? std::malloc(n + header)
                            : std::aligned_alloc(align, (n + header + align - 1) / align * align);
    if (!base) return nullptr;
    char* p = static_cast<char*>(base) + header;
    reinterpret_cast<const void**>(p)[-1] = &t_tag;
    reinterpret_cast<std::size_t*>(p)[-2] = header;
    return p;
}

void counted_free(void* p) noexcept
{
    if (!p) return;
    const void* owner = static_cast<const void**>(p)[-1];
    const std::size_t header = static_cast<std::size_t*>(p)[-2];
    if (owner != &t_tag && g_counting_frees.load(std::memory_order_relaxed)) {
        if (t_is_io < 0) {  // the writer's I/O thread is named jsonlw:<stem> (set at start)
            char name[17] = {};
            ::prctl(PR_GET_NAME, name);
            t_is_io = std::strcmp(name, "jsonlw:raw") == 0 ? 1 : 0;
        }
        if (t_is_io == 1) g_io_foreign_frees.fetch_add(1, std::memory_order_relaxed);
    }
    std::free(static_cast<char*>(p) - header);
}

}  // namespace

void* operator new(std::size_t n)
{
    if (void* p = counted(n)) return p;
    throw std::bad_alloc();
}
void* operator new[](std::size_t n)
{
    if (void* p = counted(n)) return p;
    throw std::bad_alloc();
}
void* operator new(std::size_t n, std::align_val_t a)
{
    if (void* p = counted(n, std::size_t(a))) return p;
    throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t a)
{
    if (void* p = counted(n, std::size_t(a))) return p;
    throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted(n); }
void operator delete(void* p) noexcept { counted_free(p); }
void operator delete[](void* p) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t) noexcept { counted_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { counted_free(p); }

namespace {

// One streamed output of 8 chunks (16 bytes of text and 4 ids each), as a server sends it.
// Returns what its hook calls allocated on this thread.
std::uint64_t stream_output(RawOutputWriter& w, std::uint64_t request)
{
    static const std::string text = "tok tok tok tok ";
    static const std::vector<std::int32_t> ids = {101, 102, 103, 104};
    std::uint64_t inside = 0;
    for (int k = 0; k < 8; ++k) {
        OutputChunk c;
        c.request_id = request;
        c.text_diff = text;
        c.token_ids_diff = ids;
        c.is_final = k == 7;
        c.streaming = true;
        const std::uint64_t before = t_allocations;
        w.on_chunk(c);
        inside += t_allocations - before;
    }
    return inside;
}

}  // namespace

TEST_CASE("a steady stream of outputs reuses written records' buffers: two allocations per "
          "output on the caller's thread and none of them freed on the I/O thread",
          "[raw_output][memory]")
{
    Harness h;
    RawOutputWriter w(h.executor(), options(h));
    h.start(w);

    // Warm-up: the first outputs allocate their buffers; once written they are handed back.
    std::uint64_t request = 0;
    const std::uint64_t first_output = stream_output(w, request++);
    for (int i = 1; i < 128; ++i) stream_output(w, request++);
    // A flush, not the written count: records count as written inside the batch write, and
    // their buffers go back to the hook only after it (recycle); a flush completes after both.
    flush(w);
    REQUIRE(w.stats().written == 128);
    // 2 nodes + 4 buffers each for the text, the frame ends and the ids, grown chunk by chunk.
    CHECK(first_output == 14);

    // Steady state: rounds of 64 outputs, each written and recycled before the next round
    // starts, so every output finds a set of buffers handed back (the ring keeps 256).
    std::uint64_t inside = 0, outputs = 0;
    g_counting_frees = true;
    for (int round = 0; round < 20; ++round) {
        for (int i = 0; i < 64; ++i, ++outputs) inside += stream_output(w, request++);
        flush(w);
        REQUIRE(w.stats().written == 128 + outputs);
    }
    g_counting_frees = false;
    CHECK(inside == 2 * outputs);  // the pending map's node and the LRU list's node
    CHECK(g_io_foreign_frees.load() == 0);  // nothing another thread allocated

    const auto report = close(w);
    CHECK(report.stats.written == 128 + outputs);
    CHECK(report.stats.dropped.total() == 0);
    const std::vector<Record> records = read_records(h.dir.path());
    REQUIRE(records.size() == 128 + outputs);
    std::string whole;
    for (int k = 0; k < 8; ++k) whole += "tok tok tok tok ";
    std::size_t wrong = 0;
    for (const Record& r : records) wrong += r.text == whole && r.token_ids.size() == 32 ? 0 : 1;
    CHECK(wrong == 0);
}
