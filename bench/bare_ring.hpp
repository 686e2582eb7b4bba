// jsonlw's queue with no writer around it: the floor the submit-tail scenario measures the
// writer's submit() against (docs/benchmarks.md, "Submit cost").
#pragma once

#include <jsonlw/detail/bounded_ring.hpp>
#include <jsonlw/raw_json_text.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <thread>

namespace bench {

// One caller thread pushes (push() is the writer's push of a short line: the same cell, the
// text copied into it — no state check, doorbell, burst check or validation); a thread it owns
// pops whatever is published every `poll`, never reading the producers' tail, reads the pages
// past it ahead as the writer's drain does, and with an open `fd` appends the lines it popped there in one write() per look (the I/O thread's work
// without validation, hop or accounting). finish() (or the destructor) stops and joins it.
class BareRing {
public:
    BareRing(std::size_t capacity, std::chrono::microseconds poll, int fd = -1);
    ~BareRing() { finish(); }
    BareRing(const BareRing&) = delete;
    BareRing& operator=(const BareRing&) = delete;

    bool push(std::string_view line) noexcept
    {
        std::uint64_t pos = 0;
        return ring_.try_push_with(
                   [line](void* at) noexcept {
                       ::new (at) jsonlw::RawJsonText(jsonlw::RawJsonText::fits_inline_t{}, line);
                   },
                   pos) == Ring::Push::ok;
    }

    // Stops the consumer after a last look; then popped() and problem() are final.
    void finish();
    std::uint64_t popped() const noexcept { return popped_; }
    const std::string& problem() const noexcept { return problem_; }

private:
    using Ring = jsonlw::detail::BoundedRing<jsonlw::RawJsonText>;
    void consume();

    Ring ring_;
    const std::chrono::microseconds poll_;
    const int fd_;
    std::atomic<bool> stop_{false};
    std::uint64_t popped_ = 0;  // the consumer's until finish() joins it
    std::string problem_;       // likewise
    std::thread consumer_;      // last: started once the rest is built
};

}  // namespace bench
