// encode_seconds (see encode_loop.hpp).
#include "encode_loop.hpp"

#include "clock.hpp"

#include <string_view>

namespace bench {

double encode_seconds(const std::function<void(jsonlw::JsonLine&)>& one, std::size_t iterations,
                      const std::function<void(const jsonlw::Lines&)>& each_batch,
                      jsonlw::detail::OtlpRecordForm* otlp)
{
    jsonlw::LineBuffer buf;
    const double t0 = thread_cpu_seconds();
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
    return thread_cpu_seconds() - t0;
}

}  // namespace bench
