// RawOutputEncoder's I/O-thread side: the hour-folder grouping and the buffer hand-back
// (serialize() and record_bytes() are raw_output_line.cpp's).
#include "raw_output_encoder.hpp"

#include <jsonlw/utc_time.hpp>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <utility>
#include <vector>

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

void RawOutputEncoder::write_batch(std::span<const RawOutputRecord> batch,
                                   BatchOutput<RawOutputRecord>& out)
{
    if (batch.empty()) return;
    using std::chrono::floor;
    using std::chrono::hours;
    std::string key;
    const auto key_for = [&](WallClock::time_point tp) -> const std::string& {
        key = utc_hour(tp);
        key += '/';
        key += file_name_;
        return key;
    };
    const auto first = floor<hours>(batch.front().finished_at);
    const bool one_hour = std::all_of(batch.begin(), batch.end(), [first](const auto& r) {
        return floor<hours>(r.finished_at) == first;
    });
    if (one_hour) {
        out.write_lines(key_for(batch.front().finished_at), out.serialize_batch(batch));
    } else {
        // Records that straddle an hour: one group per hour, in order of first appearance.
        std::vector<std::pair<decltype(first), std::vector<const RawOutputRecord*>>> groups;
        for (const RawOutputRecord& r : batch) {
            const auto h = floor<hours>(r.finished_at);
            auto g = std::find_if(groups.begin(), groups.end(),
                                  [h](const auto& x) { return x.first == h; });
            if (g == groups.end()) {
                groups.emplace_back(h, std::vector<const RawOutputRecord*>{});
                g = std::prev(groups.end());
            }
            g->second.push_back(&r);
        }
        for (const auto& [h, group] : groups)
            out.write_lines(key_for(group.front()->finished_at),
                            out.serialize_batch(std::span<const RawOutputRecord* const>(group)));
    }
    // The batch's lines are written and nothing reads its records again before the engine
    // destroys them: their buffers go back to the hook (RecordShells), so the hook's thread
    // reuses memory it allocated instead of freeing it here. The records are the engine's
    // own, non-const objects; the span is const only so that a layout cannot edit them.
    for (const RawOutputRecord& r : batch) shells_.put(const_cast<RawOutputRecord&>(r));
}

}  // namespace jsonlw::detail
