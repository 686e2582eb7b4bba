// RawJsonWriter: a JsonlRecordWriter whose records are JSON texts, validated and minified.
#pragma once

#include <jsonlw/jsonl_record_writer.hpp>

#include <memory>
#include <string>

namespace jsonlw {

struct RawJsonOptions {
    // Accept any JSON value per record (default: only objects, the usual JSON Lines record).
    bool allow_any_value = false;
};

// Each record is parsed in full with simdjson (so invalid JSON, invalid UTF-8, trailing
// garbage and — by default — non-objects are malformed and dropped alone), minified to one
// line and written. Validation runs on the I/O thread, never on the submitter's.
// Thread-safety and lifetime: as JsonlRecordWriter.
class RawJsonWriter final : public JsonlRecordWriter<std::string> {
public:
    RawJsonWriter(boost::asio::any_io_executor ex, WriterOptions opts, RawJsonOptions raw = {});
    ~RawJsonWriter() override;

protected:
    void serialize(const std::string& text, JsonLine& line) override;
    std::size_t record_bytes(const std::string& text) const noexcept override
    {
        return text.size();
    }

private:
    struct Validator;
    RawJsonOptions raw_;
    std::unique_ptr<Validator> validator_;  // I/O thread only
};

}  // namespace jsonlw
