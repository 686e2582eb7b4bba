// RawOutputEncoder: the writer half of RawOutputWriter's encoder — a finished output as one
// line (raw_output_line.cpp), sent to the sink under its UTC hour folder's key
// "<YYYY-MM-DDTHH>/raw-<pid>.jsonl". Owned by the engine of RawOutputWriter's
// JsonlRecordWriter; serialize() runs on the serializer threads too (it reads only its
// record), write_batch() and the buffer hand-back on the I/O thread. Borrows the hook's
// RecordShells, which outlive the writer.
#pragma once

#include <jsonlw/raw_output_record.hpp>
#include <jsonlw/record_encoder.hpp>

#include "record_shells.hpp"

#include <string>

namespace jsonlw::detail {

class RawOutputEncoder final : public RecordEncoder<RawOutputRecord> {
public:
    RawOutputEncoder(std::string file_name, RecordShells& shells);

    void serialize(const RawOutputRecord& rec, JsonLine& line) override
    {
        serialize_raw_output(rec, line);
    }
    bool concurrent_serialize() const noexcept override { return true; }
    // Groups the batch by the hour of finished_at: one group of lines per hour folder; then
    // hands the records' buffers back to the hook for new outputs.
    void write_batch(std::span<const RawOutputRecord> batch,
                     BatchOutput<RawOutputRecord>& out) override;
    std::size_t record_bytes(const RawOutputRecord& rec) const noexcept override
    {
        return raw_output_record_bytes(rec);
    }

private:
    const std::string file_name_;
    RecordShells& shells_;
};

}  // namespace jsonlw::detail
