// encode_seconds (see encode_loop.hpp).
#include "encode_loop.hpp"

#include <time.h>

#include <string_view>

namespace bench {

namespace {

double cpu_seconds() noexcept
{
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

double encode_seconds(const std::function<void(jsonlw::JsonLine&)>& one, std::size_t iterations,
                      const std::function<void(const jsonlw::Lines&)>& each_batch,
                      jsonlw::detail::OtlpRecordForm* otlp)
{
    jsonlw::LineBuffer buf;
    const double t0 = cpu_seconds();
    std::size_t in_batch = 0;
    for (std::size_t i = 0; i < iterations; ++i) {
        if (otlp && in_batch == 0) otlp->open_document(buf);
        const std::size_t body = buf.size();
        jsonlw::JsonLine line(buf, otlp);
        one(line);
        if (otlp) otlp->finish(buf, body);
        buf.push_back(otlp ? ',' : '\n');
        if (++in_batch == 64 || i + 1 == iterations) {
            if (otlp) otlp->close_document(buf, 0, in_batch);
            if (each_batch)
                each_batch(jsonlw::Lines{std::string_view(buf.data(), buf.size()), in_batch, 0,
                                         otlp != nullptr});
            buf.clear();
            in_batch = 0;
        }
    }
    return cpu_seconds() - t0;
}

}  // namespace bench
