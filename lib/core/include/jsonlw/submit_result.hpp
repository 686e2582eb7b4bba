// What happened to one submitted record.
#pragma once

#include <string_view>

namespace jsonlw {

enum class SubmitResult {
    accepted,            // queued; it will be written or counted in stats().dropped
    dropped_queue_full,  // refused: queue full (drop_newest, or block past block_timeout)
    closed,              // refused: async_close() was called; counted in dropped.closed
    disabled,            // refused, not counted: no directory, or it could not be created
};

std::string_view to_string(SubmitResult r) noexcept;

}  // namespace jsonlw
