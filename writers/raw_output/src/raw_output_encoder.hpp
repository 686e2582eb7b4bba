// RawOutputEncoder: the writer half of RawOutputWriter's encoder — a finished output as one
// line (raw_output_line.cpp), sent to the sink under its UTC hour folder's key
// "<YYYY-MM-DDTHH>/raw-<pid>.jsonl". Owned by the engine of RawOutputWriter's
// JsonlRecordWriter; serialize() runs on the serializer threads too (it reads only its
// record and its slot's digest), write_batch() and the buffer hand-back on the I/O thread.
// Borrows the hook's RecordShells and metadata counter, which outlive the writer.
#pragma once

#include <jsonlw/raw_output_record.hpp>
#include <jsonlw/record_encoder.hpp>

#include "content_digest.hpp"
#include "record_shells.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace jsonlw::detail {

// serialize_raw_output() with Capture::metadata, digesting with `digest` (the caller's
// thread's): raw_output_line.cpp.
void serialize_raw_output_metadata(const RawOutputRecord& rec, JsonLine& line,
                                   ContentDigest& digest);

class RawOutputEncoder final : public RecordEncoder<RawOutputRecord> {
public:
    // RawOutputOptions::capture; with metadata, one ContentDigest per serializer slot and
    // the hook's counter of such lines.
    struct Capturing {
        Capture capture = Capture::full;
        std::size_t serializer_threads = 1;
        std::atomic<std::uint64_t>& counted;
    };
    RawOutputEncoder(std::string file_name, RecordShells& shells, Capturing capturing);

    void serialize(const RawOutputRecord& rec, JsonLine& line) override;
    bool concurrent_serialize() const noexcept override { return true; }
    // "<UTC hour of finished_at>/<file name>": the hour folder's file.
    void key(const RawOutputRecord& rec, std::string& key) override;
    // The batch by key (the engine's grouping); then the records' buffers go back to the
    // hook for new outputs.
    void write_batch(std::span<const RawOutputRecord> batch,
                     BatchOutput<RawOutputRecord>& out) override;
    std::size_t record_bytes(const RawOutputRecord& rec) const noexcept override
    {
        return raw_output_record_bytes(rec);
    }

private:
    const std::string file_name_;
    // key()'s last hour and its key: records of one batch mostly share an hour, so the
    // folder name is formatted once per hour, not once per record (I/O thread).
    std::chrono::time_point<WallClock, std::chrono::hours> last_hour_ =
        std::chrono::time_point<WallClock, std::chrono::hours>::min();
    std::string last_key_;
    RecordShells& shells_;
    // Capture::metadata: digests_[serializer_slot()], that slot's thread's alone.
    std::vector<ContentDigest> digests_;
    std::atomic<std::uint64_t>& metadata_captured_;
};

}  // namespace jsonlw::detail
