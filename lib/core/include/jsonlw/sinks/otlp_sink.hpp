// OtlpSink: a decorator that hands its sink OTLP JSON Lines instead of the writer's records —
// each group of lines becomes one OpenTelemetry LogsData document on one line; a group the
// engine already wrote as that line (Lines::log_records) passes on as it is. The engine
// puts one in front of the writer's sink when WriterOptions::format is LineFormat::otlp;
// docs/otlp.md says what each line holds.
#pragma once

#include <jsonlw/json_line.hpp>
#include <jsonlw/otlp_options.hpp>
#include <jsonlw/sinks/sink_decorator.hpp>

#include <cstdint>
#include <memory>

namespace jsonlw {

namespace detail {
class OtlpLogsEncoder;
}

// Called by the writer's engine as every LineSink is (start() on the writer's start() thread,
// the rest on its I/O thread); owns its encoder and the buffer the OTLP line is built in, and
// shares the sink it wraps. What the wrapped sink reports for the one OTLP line is what the
// writer counts for the group's records.
class OtlpSink final : public SinkDecorator {
public:
    OtlpSink(std::shared_ptr<LineSink> inner, OtlpOptions opts);
    ~OtlpSink() override;

    std::error_code start(const SinkContext& ctx) override;
    AppendResult append(std::string_view key, const Lines& lines) noexcept override;
    // Lines that were not a JSON object, carried as a string body (any thread after close;
    // the I/O thread before).
    std::uint64_t malformed_bodies() const noexcept;

private:
    OtlpOptions opts_;
    std::unique_ptr<detail::OtlpLogsEncoder> encoder_;
    LineBuffer buf_;
};

}  // namespace jsonlw
