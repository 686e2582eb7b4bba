// PerfMetricsEncoder: how a PerfMetricsRecord becomes a line (serialize_perf_metrics(), in
// TensorRT-LLM's key order) — PerfMetricsWriter's encoder, for a JsonlRecordWriter of perf
// metrics records with another layout or sink:
//     JsonlRecordWriter<PerfMetricsRecord> w(ex, opts, std::make_shared<PerfMetricsEncoder>());
// Stateless: runs on the I/O thread and on the serializer helpers at once.
#pragma once

#include <jsonlw/perf_metrics_record.hpp>
#include <jsonlw/record_encoder.hpp>

#include <cstddef>

namespace jsonlw {

class PerfMetricsEncoder final : public RecordEncoder<PerfMetricsRecord> {
public:
    void serialize(const PerfMetricsRecord& rec, JsonLine& line) override;
    // serialize() reads only its record: serializer_threads > 1 is honoured.
    bool concurrent_serialize() const noexcept override { return true; }
    // A rough line size: phases and their step lists.
    std::size_t record_bytes(const PerfMetricsRecord& rec) const noexcept override;
};

}  // namespace jsonlw
