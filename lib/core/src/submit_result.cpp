#include <jsonlw/submit_result.hpp>

namespace jsonlw {

std::string_view to_string(SubmitResult r) noexcept
{
    switch (r) {
    case SubmitResult::accepted: return "accepted";
    case SubmitResult::dropped_queue_full: return "dropped_queue_full";
    case SubmitResult::closed: return "closed";
    case SubmitResult::disabled: return "disabled";
    }
    return "?";
}

}  // namespace jsonlw
