// What happens to a record submitted while the queue is full.
#pragma once

namespace jsonlw {

enum class Overflow {
    // The new record is refused: submit() returns dropped_queue_full, stats().dropped.queue_full
    // counts it. The queued records are kept. (The behaviour of the Python writers.)
    drop_newest,
    // The oldest queued record is evicted to make room: submit() returns accepted and
    // stats().dropped.oldest_evicted counts the evicted one. Newest data wins.
    drop_oldest,
    // submit() waits on the calling thread, at most block_timeout, for room; async_submit()
    // waits without blocking its thread. Still full at the deadline: dropped_queue_full.
    block,
};

}  // namespace jsonlw
