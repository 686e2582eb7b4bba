// RawOutputEncoder's I/O-thread side: the hour folder's key and the buffer hand-back
// (serialize() and record_bytes() are raw_output_line.cpp's).
#include "raw_output_encoder.hpp"

#include <jsonlw/utc_time.hpp>

#include <algorithm>
#include <chrono>
#include <utility>

namespace jsonlw::detail {

RawOutputEncoder::RawOutputEncoder(std::string file_name, RecordShells& shells,
                                   Capturing capturing)
    : file_name_(std::move(file_name)), shells_(shells), metadata_captured_(capturing.counted)
{
    // As many slots as the engine may use (WriterOptions::serializer_threads: 0 is 1, at
    // most 64).
    if (capturing.capture == Capture::metadata)
        digests_.resize(std::clamp<std::size_t>(capturing.serializer_threads, 1, 64));
}

void RawOutputEncoder::serialize(const RawOutputRecord& rec, JsonLine& line)
{
    if (digests_.empty()) {
        serialize_raw_output(rec, line);
        return;
    }
    serialize_raw_output_metadata(rec, line, digests_[serializer_slot()]);
    metadata_captured_.fetch_add(1, std::memory_order_relaxed);
}

void RawOutputEncoder::key(const RawOutputRecord& rec, std::string& key)
{
    const auto hour = std::chrono::floor<std::chrono::hours>(rec.finished_at);
    if (hour != last_hour_) {
        last_hour_ = hour;
        last_key_ = utc_hour(hour);
        last_key_ += '/';
        last_key_ += file_name_;
    }
    key += last_key_;
}

void RawOutputEncoder::write_batch(std::span<const RawOutputRecord> batch,
                                   BatchOutput<RawOutputRecord>& out)
{
    out.write_by_key(batch);
    // The batch's lines are written and nothing reads its records again before the engine
    // destroys them: their buffers go back to the hook (RecordShells), so the hook's thread
    // reuses memory it allocated instead of freeing it here. The records are the engine's
    // own, non-const objects; the span is const only so that a layout cannot edit them.
    for (const RawOutputRecord& r : batch) shells_.put(const_cast<RawOutputRecord&>(r));
}

}  // namespace jsonlw::detail
