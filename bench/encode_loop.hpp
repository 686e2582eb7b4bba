// encode_seconds: records serialized in batches of 64 into one buffer (as serialize_batch()
// does), each full batch optionally handed on (to an OtlpSink, say); thread CPU time. With an
// OtlpRecordForm each batch is written as one OTLP LogsData line, as a writer whose format is
// LineFormat::otlp writes it. Used by the otlp-cost and record-features scenarios.
#pragma once

#include <jsonlw/detail/otlp_record_form.hpp>
#include <jsonlw/json_line.hpp>
#include <jsonlw/lines.hpp>

#include <cstddef>
#include <functional>

namespace bench {

double encode_seconds(const std::function<void(jsonlw::JsonLine&)>& one, std::size_t iterations,
                      const std::function<void(const jsonlw::Lines&)>& each_batch = {},
                      jsonlw::detail::OtlpRecordForm* otlp = nullptr);

}  // namespace bench
