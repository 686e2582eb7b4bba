// The Quill-style baseline of the submit-cost scenario: what a logger whose frontend copies
// each record into a preallocated single-producer byte ring, drained by a polling backend
// thread, pays per call (the design of Quill's frontend queue, FrontendOptions'
// initial_queue_capacity of 128 KiB; written here, nothing of Quill's is used). It validates
// nothing and keeps no counts: the floor a lock-free, syscall-free call can reach.
#include "clock.hpp"
#include "line_pool.hpp"
#include "paced_calls.hpp"
#include "runs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string_view>
#include <thread>

namespace bench {

namespace {

// One producer, one consumer. Records are [length: 4 bytes][bytes], each at an 8-byte
// boundary; one that would cross the ring's end is written at its start, after a marker.
// The buffer is written through (touched) before the first push.
class SpscByteRing {
public:
    explicit SpscByteRing(std::size_t bytes)
        : size_(std::bit_ceil(std::max<std::size_t>(bytes, 4096))),
          buf_(new unsigned char[size_])
    {
        std::memset(buf_.get(), 0, size_);
    }

    // The producer: false when the ring has no room (the record is dropped).
    bool try_push(std::string_view line) noexcept
    {
        const std::uint64_t need = record_bytes(line.size());
        std::uint64_t at = write_;
        std::uint64_t end = at + need;
        const std::size_t off = at & (size_ - 1);
        if (off + need > size_) end += size_ - off;  // skip to the start
        if (end - cached_read_ > size_) {
            cached_read_ = read_.load(std::memory_order_acquire);
            if (end - cached_read_ > size_) return false;
        }
        if (off + need > size_) {
            put_length(off, skip);
            at += size_ - off;
        }
        const std::size_t o = at & (size_ - 1);
        put_length(o, static_cast<std::uint32_t>(line.size()));
        std::memcpy(buf_.get() + o + 4, line.data(), line.size());
        write_ = end;
        published_.store(end, std::memory_order_release);
        return true;
    }

    // The consumer: hands every published record to `each(std::string_view)`; returns how
    // many there were.
    template <class Each>
    std::size_t drain(Each&& each)
    {
        const std::uint64_t w = published_.load(std::memory_order_acquire);
        std::uint64_t r = read_.load(std::memory_order_relaxed);
        std::size_t n = 0;
        while (r < w) {
            const std::size_t o = r & (size_ - 1);
            std::uint32_t len = 0;
            std::memcpy(&len, buf_.get() + o, 4);
            if (len == skip) {
                r += size_ - o;
                continue;
            }
            each(std::string_view(reinterpret_cast<const char*>(buf_.get() + o + 4), len));
            r += record_bytes(len);
            ++n;
        }
        read_.store(r, std::memory_order_release);
        return n;
    }

private:
    static constexpr std::uint32_t skip = 0xFFFFFFFF;
    static std::uint64_t record_bytes(std::size_t len) noexcept { return (4 + len + 7) & ~std::uint64_t{7}; }
    void put_length(std::size_t off, std::uint32_t len) noexcept { std::memcpy(buf_.get() + off, &len, 4); }

    const std::size_t size_;
    std::unique_ptr<unsigned char[]> buf_;
    std::uint64_t write_ = 0;        // the producer's
    std::uint64_t cached_read_ = 0;  // the producer's copy of read_
    alignas(64) std::atomic<std::uint64_t> published_{0};
    alignas(64) std::atomic<std::uint64_t> read_{0};
};

}  // namespace

SubmitCostResult quill_style_submit_cost(const SubmitCostSpec& s)
{
    SubmitCostResult r;
    const auto path = s.dir / "quill-style.jsonl";
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (!f) {
        r.problem = fmt::format("fopen {}: {}", path.string(), std::strerror(errno));
        return r;
    }
    std::uint64_t written = 0;
    {
        SpscByteRing ring(s.ring_bytes);
        std::atomic<bool> stop{false};
        std::thread backend([&] {
            for (;;) {
                const bool last = stop.load(std::memory_order_acquire);
                const std::size_t n = ring.drain([&](std::string_view line) {
                    std::fwrite(line.data(), 1, line.size(), f);
                    std::fputc('\n', f);
                });
                written += n;
                if (n == 0) {
                    if (last) break;
                    std::this_thread::sleep_for(std::chrono::microseconds(100));
                }
            }
        });
        PacedCalls paced(s, r);
        while (paced.more())
            paced.step([&](std::size_t i) {
                return [&ring, &line = s.pool->at(i)] { return ring.try_push(line); };
            });
        paced.finish();
        stop.store(true, std::memory_order_release);
        backend.join();
    }
    std::fclose(f);
    const std::uint64_t accepted = r.calls - r.refused;
    const FileCheck c = check_file(path);
    r.problem = file_problem(c, accepted, accepted * s.pool->line_bytes);
    if (r.problem.empty() && written != accepted)
        r.problem = fmt::format("{} written, {} accepted", written, accepted);
    empty_dir(s.dir);
    return r;
}

}  // namespace bench
