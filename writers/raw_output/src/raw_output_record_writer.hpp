// RawOutputRecordWriter: the writer half of RawOutputWriter — a JsonlRecordWriter whose
// records are finished outputs, one line each (raw_output_line.cpp), sent to the sink under
// their UTC hour folder's key "<YYYY-MM-DDTHH>/raw-<pid>.jsonl". Owned by RawOutputWriter
// (the hook half), which hands it records from the hook's threads; serialize() (on the
// serializer threads too: it reads only its record), write_batch() and the buffer hand-back
// run on its I/O thread. Borrows the hook's RecordShells, which outlive it.
#pragma once

#include <jsonlw/jsonl_record_writer.hpp>
#include <jsonlw/raw_output_record.hpp>

#include "record_shells.hpp"

#include <string>

namespace jsonlw::detail {

class RawOutputRecordWriter final : public JsonlRecordWriter<RawOutputRecord> {
public:
    RawOutputRecordWriter(boost::asio::any_io_executor ex, WriterOptions opts, std::string file_name,
                          RecordShells& shells);
    // serialize() and write_batch() use file_name_ and shells_: the I/O thread stops first.
    ~RawOutputRecordWriter() override { shutdown(); }

protected:
    void serialize(const RawOutputRecord& rec, JsonLine& line) override
    {
        serialize_raw_output(rec, line);
    }
    bool concurrent_serialize() const noexcept override { return true; }
    // Groups the batch by the hour of finished_at: one group of lines per hour folder; then
    // hands the records' buffers back to the hook for new outputs.
    void write_batch(std::span<const RawOutputRecord> batch) override;
    std::size_t record_bytes(const RawOutputRecord& rec) const noexcept override
    {
        return raw_output_record_bytes(rec);
    }

private:
    const std::string file_name_;
    RecordShells& shells_;
};

}  // namespace jsonlw::detail
