// BareRing's consumer thread (bare_ring.hpp).
#include "bare_ring.hpp"

#include <unistd.h>

namespace bench {

BareRing::BareRing(std::size_t capacity, std::chrono::microseconds poll, int fd)
    : ring_(capacity), poll_(poll), fd_(fd), consumer_([this] { consume(); })
{
}

void BareRing::finish()
{
    if (!consumer_.joinable()) return;
    stop_.store(true, std::memory_order_release);
    consumer_.join();
}

void BareRing::consume()
{
    std::string batch;
    for (;;) {
        const bool last = stop_.load(std::memory_order_acquire);
        while (ring_.try_pop_into([&](jsonlw::RawJsonText&& t) noexcept {
            ++popped_;
            if (fd_ >= 0) {
                batch.append(t.view());
                batch.push_back('\n');
            }
        })) {}
        if (!batch.empty()) {
            if (::write(fd_, batch.data(), batch.size()) != static_cast<ssize_t>(batch.size()))
                problem_ = "a short or failed write()";
            batch.clear();
        }
        // As the writer's drain does after a look (record_engine.hpp): the pages the next
        // pushes go to read ahead, so that a large ring's floor is not its cold pages'.
        ring_.warm_ahead(ring_.consumed(), Ring::warm_cells);
        if (last) break;
        std::this_thread::sleep_for(poll_);
    }
}

}  // namespace bench
