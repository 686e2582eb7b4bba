// RawJsonEncoder: RawJsonWriter's encoder — a record that is a JSON text, validated (simdjson)
// and minified as one line (RawJsonValidation), its batches indexed as one text and walked
// record by record. For a JsonlRecordWriter<RawJsonText> with another layout or sink:
//     JsonlRecordWriter<RawJsonText> w(ex, opts, std::make_shared<RawJsonEncoder>(raw, opts));
// Runs on the writer's I/O thread and its serializer helpers (one parser per helper).
#pragma once

#include <jsonlw/raw_json_text.hpp>
#include <jsonlw/record_encoder.hpp>
#include <jsonlw/writer_options.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
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
    // Under full validation, while the I/O thread is behind (its last pop filled a batch), a
    // text of up to RawJsonText::inline_capacity bytes is validated on the submitting thread
    // (JsonTextWriter::submit(), about 150 ns for 250 bytes; never an allocation, a lock or
    // a wait) and the I/O thread only copies it: validation then runs on two cores. Off: the
    // I/O thread (and serializer_threads' helpers) validate every record. Default on.
    bool check_when_behind = true;
};

struct RawJsonWriterProbe;  // bench and tests: the batch path without a file

class RawJsonEncoder final : public RecordEncoder<RawJsonText> {
public:
    // `writer`: the options of the writer it will serve (one parser per serializer thread).
    RawJsonEncoder(RawJsonOptions raw, const WriterOptions& writer);
    ~RawJsonEncoder() override;

    void serialize(const RawJsonText& text, JsonLine& line) override;
    bool concurrent_serialize() const noexcept override { return true; }
    // Validates the batch (or the chunk a helper serializes) first: one stage 1, one walk.
    void begin_chunk(std::span<const RawJsonText> chunk) noexcept override;
    std::size_t record_bytes(const RawJsonText& text) const noexcept override
    {
        return text.size();
    }

    // Whether JsonTextWriter may call check_on_submit() (full validation and
    // RawJsonOptions::check_when_behind).
    bool checks_on_submit() const noexcept { return submit_checks_ != nullptr; }
    // Validates `text` on the calling thread with one of the encoder's preallocated parsers —
    // the verdict serialize() then uses instead of parsing it again. Never allocates, locks or
    // waits: `unchecked` when the thread's parser is busy (another submitter has it), or the
    // text is longer than RawJsonText::inline_capacity. Any thread.
    RawJsonText::Check check_on_submit(std::string_view text) const noexcept;

private:
    friend struct RawJsonWriterProbe;
    struct Validator;
    struct SubmitChecks;
    // Validates `batch` (stage 1 once, the grammar walk per record); serialize() then uses
    // the verdicts for the records of this span, until the next begin_batch() on the thread.
    void begin_batch(std::span<const RawJsonText> batch) noexcept;
    void serialize_trusted(const RawJsonText& text, JsonLine& line);
    // The running serializer thread's parser and scratch (one per serializer_slot()).
    Validator& validator() const noexcept { return *validators_[serializer_slot()]; }
    // For RawJsonWriterProbe, over every serializer thread (read while none runs): records
    // the batch pass decided, and minify passes.
    std::uint64_t batch_decided() const noexcept;
    std::uint64_t minify_passes() const noexcept;
    // For RawJsonWriterProbe: texts check_on_submit() validated.
    std::uint64_t checked_on_submit() const noexcept;

    RawJsonOptions raw_;
    std::vector<std::unique_ptr<Validator>> validators_;
    std::unique_ptr<SubmitChecks> submit_checks_;  // null: nothing is checked on submit
};

}  // namespace jsonlw
