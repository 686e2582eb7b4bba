// host_name() and utc_stamp(): the names files and writer ids are made of.
#include "host_names.hpp"

#include <unistd.h>

namespace jsonlw::detail {

std::string host_name()
{
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
    return buf;
}

std::string utc_stamp(std::time_t now)
{
    std::tm tm{};
    ::gmtime_r(&now, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
    return buf;
}

}  // namespace jsonlw::detail
