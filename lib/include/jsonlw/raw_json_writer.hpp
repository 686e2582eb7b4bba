// RawJsonWriter: a JsonlRecordWriter whose records are JSON texts, validated and minified.
#pragma once

#include <jsonlw/jsonl_record_writer.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace jsonlw {

// How much of a record's JSON the writer checks. Either way every written record is exactly
// one line: the file never holds a raw CR or LF inside a record.
enum class RawJsonValidation : std::uint8_t {
    // Each record is parsed in full (simdjson): invalid JSON, invalid UTF-8, trailing garbage,
    // two values or none, and — unless allow_any_value — a non-object are malformed and
    // dropped alone. A written record is valid JSON, minified (no whitespace outside strings).
    full,
    // The caller guarantees each record is one JSON value; jsonlw does not parse it. Written
    // as given, except that a raw CR or LF (which valid JSON holds only as insignificant
    // whitespace) becomes a space, and such a record is counted as `sanitized`. An empty or
    // whitespace-only record, and — unless allow_any_value — one whose first non-whitespace
    // byte is not `{`, is malformed. Invalid JSON passed in is written as it is.
    trusted,
};

struct RawJsonOptions {
    // Accept any JSON value per record (default: only objects, the usual JSON Lines record).
    bool allow_any_value = false;
    // Default: full validation. See RawJsonValidation.
    RawJsonValidation validation = RawJsonValidation::full;
};

struct RawJsonWriterProbe;  // bench and tests: the batch path without a file

// Under full validation each batch's records are parsed together as one simdjson document
// stream (a record whose document does not span exactly its record, and every record after
// a parse error, is parsed alone instead, so a malformed record is dropped alone and counted
// as malformed); a record with no whitespace outside its strings is copied, not minified.
// Validation runs on the I/O thread, never on the submitter's — and with
// WriterOptions::serializer_threads > 1 on the writer's helpers too, each chunk of a unit
// validated as one stream by the thread that serializes it.
// Thread-safety and lifetime: as JsonlRecordWriter.
class RawJsonWriter final : public JsonlRecordWriter<std::string> {
public:
    RawJsonWriter(boost::asio::any_io_executor ex, WriterOptions opts, RawJsonOptions raw = {});
    ~RawJsonWriter() override;

protected:
    void serialize(const std::string& text, JsonLine& line) override;
    void write_batch(std::span<const std::string> batch) override;
    bool concurrent_serialize() const noexcept override { return true; }
    void begin_chunk(std::span<const std::string> chunk) noexcept override;
    std::size_t record_bytes(const std::string& text) const noexcept override
    {
        return text.size();
    }

private:
    friend struct RawJsonWriterProbe;
    struct Validator;
    // Validates `batch` as one document stream; serialize() then uses the verdicts for the
    // records of this span. end_batch() forgets them.
    void begin_batch(std::span<const std::string> batch) noexcept;
    void end_batch() noexcept;
    void serialize_trusted(const std::string& text, JsonLine& line);
    // The running serializer thread's parser and scratch (one per serializer_slot()).
    Validator& validator() const noexcept { return *validators_[serializer_slot()]; }
    // For RawJsonWriterProbe, over every serializer thread (read while none runs): records
    // the batch pass decided, and minify passes.
    std::uint64_t batch_decided() const noexcept;
    std::uint64_t minify_passes() const noexcept;

    RawJsonOptions raw_;
    std::vector<std::unique_ptr<Validator>> validators_;
};

}  // namespace jsonlw
