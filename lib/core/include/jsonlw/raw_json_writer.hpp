// The writers whose records are JSON texts: JsonTextWriter, the intake they share (a text
// submitted by any string form, a short one copied once into its queue cell), and
// RawJsonWriter, the preset that validates and minifies each text into a file (RawJsonEncoder,
// raw_json_encoder.hpp). KafkaJsonWriter (kafka_writer.hpp) is the same intake over a
// KafkaSink.
#pragma once

#include <jsonlw/jsonl_record_writer.hpp>
#include <jsonlw/raw_json_encoder.hpp>
#include <jsonlw/raw_json_text.hpp>
#include <jsonlw/writer_options.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace jsonlw {

// Called from any thread as JsonlRecordWriter (submit() never blocks but under Overflow::block);
// owns nothing beyond the engine it is, and is built only by the final writers over it
// (RawJsonWriter, KafkaJsonWriter), which give it a RawJsonEncoder.
//
// Records are RawJsonText: submit(std::string_view) (or a const std::string&, or a C string)
// copies a text of up to RawJsonText::inline_capacity bytes once, into its queue cell —
// writer-owned memory, no allocation, nothing freed on another thread; a longer one is
// copied into a std::string. submit(std::string&&) does the same with a short text (the
// string keeps its buffer, which its owner frees on its own thread) and moves a longer one
// in (no copy; its buffer is freed on the I/O thread).
//
// While the I/O thread is behind (its last pop filled a batch), a short text is validated
// on the submitting thread before it is queued (RawJsonEncoder::check_on_submit(), about
// 150 ns for 250 bytes; no allocation, lock or wait), so a producer that would otherwise wait
// for room shares the I/O thread's largest cost. RawJsonOptions::check_when_behind turns it off.
class JsonTextWriter : public JsonlRecordWriter<RawJsonText> {
public:
    using JsonlRecordWriter<RawJsonText>::submit;
    SubmitResult submit(std::string_view text)
    {
        if (text.size() <= RawJsonText::inline_capacity) {
            if (checks_ && backlogged()) [[unlikely]] {
                const RawJsonText::Check c = checks_->check_on_submit(text);
                if (c.verdict() != RawJsonText::Checked::unchecked)
                    return emplace(RawJsonText::fits_inline_t{}, text, c);
            }
            return emplace(RawJsonText::fits_inline_t{}, text);
        }
        return JsonlRecordWriter<RawJsonText>::submit(RawJsonText(text));
    }
    SubmitResult submit(const std::string& text) { return submit(std::string_view(text)); }
    SubmitResult submit(const char* text) { return submit(std::string_view(text)); }
    SubmitResult submit(std::string&& text)
    {
        if (text.size() <= RawJsonText::inline_capacity) return submit(std::string_view(text));
        return JsonlRecordWriter<RawJsonText>::submit(
            RawJsonText(RawJsonText::take_buffer_t{}, std::move(text)));
    }

protected:
    JsonTextWriter(boost::asio::any_io_executor ex, WriterOptions opts,
                   const std::shared_ptr<RawJsonEncoder>& encoder)
        : JsonlRecordWriter<RawJsonText>(std::move(ex), std::move(opts), encoder),
          checks_(encoder && encoder->checks_on_submit() ? encoder.get() : nullptr)
    {
    }

private:
    const RawJsonEncoder* checks_;  // the engine's encoder, when it checks texts on submit
};

// The engine's options (WriterOptions, every field with its default) plus the writer's own.
struct RawJsonWriterOptions : WriterOptions {
    // How each record is validated (default: full, objects only; raw_json_encoder.hpp).
    RawJsonOptions raw{};
};

// Under full validation each batch's records are indexed together by simdjson's stage 1 and
// walked record by record (detail/json_grammar_check.hpp; a record the walk does not decide,
// and every record after it, is parsed alone by simdjson instead, so a malformed record is
// dropped alone and counted as malformed); a record with no whitespace outside its strings
// is copied, not minified.
// Validation runs on the I/O thread — and with WriterOptions::serializer_threads > 1 on the
// writer's helpers too, each chunk of a unit validated as one stream by the thread that
// serializes it — and, while the I/O thread is behind, a short text on its submitter's thread
// (JsonTextWriter; RawJsonOptions::check_when_behind).
// Thread-safety and lifetime: as JsonlRecordWriter; the engine owns the encoder.
class RawJsonWriter final : public JsonTextWriter {
public:
    RawJsonWriter(boost::asio::any_io_executor ex, RawJsonWriterOptions opts);
    // The engine's options and the validation apart: what {.directory = …} (designated
    // initializers name only WriterOptions' fields) selects, and the form programs written
    // before RawJsonWriterOptions use.
    RawJsonWriter(boost::asio::any_io_executor ex, WriterOptions opts, RawJsonOptions raw = {});

private:
    friend struct RawJsonWriterProbe;
    RawJsonWriter(boost::asio::any_io_executor ex, WriterOptions opts,
                  std::shared_ptr<RawJsonEncoder> encoder);

    RawJsonEncoder* encoder_;  // owned by the engine
};

}  // namespace jsonlw
