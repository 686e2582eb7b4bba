// OtlpRecordForm: JsonLine's OTLP mode — the calls an encoder's serialize() makes for one record
// write that record straight as an OTLP JSON LogRecord (docs/otlp.md), with no JSON Lines text
// in between and no second pass over it. One per serializer thread of a writer whose format is
// LineFormat::otlp: WriterCore owns them, record_engine.hpp's serialize_into() hands the running
// thread's to each record's JsonLine; only that thread touches it.
#pragma once

#include <jsonlw/json_line.hpp>
#include <jsonlw/otlp_options.hpp>
#include <jsonlw/trace_context.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jsonlw::detail {

class OtlpLogRecordEncoder;
class OtlpRecordValues;
struct OtlpClock;

class OtlpRecordForm {
public:
    explicit OtlpRecordForm(const OtlpOptions& opts);
    ~OtlpRecordForm();
    OtlpRecordForm(const OtlpRecordForm&) = delete;
    OtlpRecordForm& operator=(const OtlpRecordForm&) = delete;

    // Whether records under `opts` can be written this way (at most 64 JSON pointers); when
    // not, the writer's OtlpSink converts JSON Lines instead.
    static bool supports(const OtlpOptions& opts) noexcept;

    // Before any record: `host` and `pid` become the resource's host.name and process.pid.
    void start(std::string_view host, int pid);
    // A LogsData line around a group of records: open() appends its start, takes the
    // observedTimeUnixNano of the records that follow; each record is then followed by ',';
    // close() ends the line, or removes it when no record went in.
    void open_document(LineBuffer& buf);
    void close_document(LineBuffer& buf, std::size_t at, std::size_t records);
    // Takes the observedTimeUnixNano (and steady-to-Unix offset) of the records that follow.
    void begin_batch();
    // After serialize() wrote the record that begins at buf[body]: a record written other
    // than as one object built call by call (raw JSON text, say) is converted as a whole; one
    // left with an object or array open throws MalformedRecord.
    void finish(LineBuffer& buf, std::size_t body);
    // Records that were not a JSON object, kept as a stringValue body.
    std::uint64_t malformed_bodies() const noexcept;

private:
    friend class jsonlw::JsonLine;

    // JsonLine's calls in OTLP mode. Those returning bool return false when the record is
    // not an object built call by call: JsonLine then leaves OTLP mode and writes JSON Lines,
    // which finish() converts.
    void begin_record(JsonLine& l) noexcept;
    bool begin_object(JsonLine& l);
    bool end_object(JsonLine& l);
    bool begin_array(JsonLine& l);
    bool end_array(JsonLine& l);
    bool key(JsonLine& l, std::string_view name, bool needs_no_escape);
    // A string; a held-back top-level "traceparent" member's value that parses leaves the
    // body for traceId/spanId/flags.
    bool string(JsonLine& l, std::string_view s);
    bool integer(JsonLine& l, std::int64_t v);
    bool unsigned_integer(JsonLine& l, std::uint64_t v);
    bool number(JsonLine& l, double d);  // finite
    bool boolean(JsonLine& l, bool b);
    bool null(JsonLine& l);
    // key(name) and its value in one call, for a name that needs no escaping (false: not
    // the simple case, make the two calls).
    bool number_field(JsonLine& l, std::string_view name, double d);
    bool integer_field(JsonLine& l, std::string_view name, std::int64_t v);
    bool raw(JsonLine& l, std::string_view json);

    // The pointers a value matches: `exact` ends at it, `deeper` continues inside it.
    struct Match {
        std::uint64_t exact = 0;
        std::uint64_t deeper = 0;
    };
    struct Frame {
        bool array = false;
        bool sep = false;           // a member or element was written
        std::uint64_t match = 0;    // pointers its members' keys may continue
        std::uint64_t key_sizes = 0;  // bit n % 64: one of those keys is n bytes long
        std::uint64_t exact = 0;    // pointers this container is the value of
        std::size_t span_at = 0;    // where its AnyValue begins
    };
    bool go_plain(JsonLine& l);
    // Where a scalar's AnyValue begins, room for `room` bytes made (its separator written);
    // nullptr: not in OTLP mode. scalar_end() notes its JSON Lines `text` where a pointer
    // ends at it and closes it at `end` (room for 2 bytes there).
    char* scalar_at(JsonLine& l, std::size_t room);
    // A double's value goes with its text (a time field takes it without parsing the text).
    void scalar_end(JsonLine& l, std::string_view text, char* end, double number = nan_);
    // The scalar's AnyValue from p (after its separator, room made).
    void integer_at(JsonLine& l, char* p, std::int64_t v);
    void number_at(JsonLine& l, char* p, double d);
    void number_slow(JsonLine& l, char* p, double d);
    // Sets key_match_ for the member `name` of the innermost object.
    void match_key(std::string_view name);
    void match_key_slow(std::string_view name, std::uint64_t candidates);
    // A member `name` opened, room for `room` bytes after it; nullptr: not the simple case.
    char* field_at(JsonLine& l, std::string_view name, std::size_t room);
    Match before_value(JsonLine& l);
    void after_value(JsonLine& l);
    void member_open(JsonLine& l, std::string_view name, bool needs_no_escape);
    void open_container(JsonLine& l, bool array);
    bool close_container(JsonLine& l);
    void note(std::uint64_t which, std::string_view text, bool any_value, double number = nan_);
    static constexpr double nan_ = __builtin_nan("");

    std::unique_ptr<OtlpLogRecordEncoder> records_;
    std::unique_ptr<OtlpRecordValues> values_;  // the values the record's tail takes
    std::unique_ptr<OtlpClock> clock_;
    std::string head_;             // up to "body":, for this batch
    std::string prefix_;           // the LogsData line's start (start())
    // Per record.
    std::vector<Frame> frames_;
    bool started_ = false;
    bool passthrough_ = false;
    bool held_traceparent_ = false;
    Match key_match_{};
    std::optional<TraceContext> trace_;
    std::string scratch_;
};

}  // namespace jsonlw::detail
