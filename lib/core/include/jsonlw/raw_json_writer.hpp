// RawJsonWriter: a JsonlRecordWriter whose records are JSON texts, validated and minified.
#pragma once

#include <jsonlw/jsonl_record_writer.hpp>
#include <jsonlw/raw_json_text.hpp>

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
//
// Records are RawJsonText: submit(std::string_view) (or a const std::string&, or a C string)
// copies a text of up to RawJsonText::inline_capacity bytes once, into its queue cell —
// writer-owned memory, no allocation, nothing freed on another thread; a longer one is
// copied into a std::string. submit(std::string&&) moves the caller's string in (no copy;
// its buffer is freed on the I/O thread).
class RawJsonWriter final : public JsonlRecordWriter<RawJsonText> {
public:
    RawJsonWriter(boost::asio::any_io_executor ex, WriterOptions opts, RawJsonOptions raw = {});
    ~RawJsonWriter() override;

    using JsonlRecordWriter<RawJsonText>::submit;
    SubmitResult submit(std::string_view text)
    {
        if (text.size() <= RawJsonText::inline_capacity)
            return emplace(RawJsonText::fits_inline_t{}, text);
        return JsonlRecordWriter<RawJsonText>::submit(RawJsonText(text));
    }
    SubmitResult submit(const std::string& text) { return submit(std::string_view(text)); }
    SubmitResult submit(const char* text) { return submit(std::string_view(text)); }
    SubmitResult submit(std::string&& text)
    {
        return JsonlRecordWriter<RawJsonText>::submit(RawJsonText(std::move(text)));
    }

protected:
    void serialize(const RawJsonText& text, JsonLine& line) override;
    void write_batch(std::span<const RawJsonText> batch) override;
    bool concurrent_serialize() const noexcept override { return true; }
    void begin_chunk(std::span<const RawJsonText> chunk) noexcept override;
    std::size_t record_bytes(const RawJsonText& text) const noexcept override
    {
        return text.size();
    }

private:
    friend struct RawJsonWriterProbe;
    struct Validator;
    // Validates `batch` as one document stream; serialize() then uses the verdicts for the
    // records of this span. end_batch() forgets them.
    void begin_batch(std::span<const RawJsonText> batch) noexcept;
    void end_batch() noexcept;
    void serialize_trusted(const RawJsonText& text, JsonLine& line);
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
