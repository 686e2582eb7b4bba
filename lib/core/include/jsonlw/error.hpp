// jsonlw's error codes, for the error_code of async operations.
#pragma once

#include <boost/system/error_code.hpp>

#include <system_error>

namespace jsonlw {

// The error_code of jsonlw's async operations: Asio's own (converts to std::error_code).
using error_code = boost::system::error_code;

enum class errc {
    timed_out = 1,  // async_close(): shutdown_timeout passed before every record was resolved
    disabled,       // the writer is inert or disabled
};

const std::error_category& error_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept
{
    return {static_cast<int>(e), error_category()};
}

}  // namespace jsonlw

template <>
struct std::is_error_code_enum<jsonlw::errc> : std::true_type {};
