// OtlpRecordForm (see jsonlw/detail/otlp_record_form.hpp). The AnyValue spellings are
// OtlpBodyScanner's (otlp_body_scanner.cpp), so a record reads the same either way: what
// JsonLine writes for a scalar in JSON Lines is exactly the text the scanner copies.
#include <jsonlw/detail/otlp_record_form.hpp>

#include "../line_bytes.hpp"
#include "otlp_log_record.hpp"
#include "otlp_record_values.hpp"
#include "otlp_logs_encoder.hpp"

#include <jsonlw/malformed_record.hpp>

#include <bit>
#include <cstring>

namespace jsonlw::detail {

namespace {

void put(LineBuffer& out, std::string_view s)
{
    const std::size_t at = out.size();
    out.resize(at + s.size());
    std::memcpy(out.data() + at, s.data(), s.size());
}

// Copies a literal (its size known when compiling) to p; returns the end.
template <std::size_t N>
[[gnu::always_inline]] inline char* lit(char* p, const char (&s)[N]) noexcept
{
    std::memcpy(p, s, N - 1);
    return p + N - 1;
}

}  // namespace

bool OtlpRecordForm::supports(const OtlpOptions& opts) noexcept
{
    return opts.time_fields.size() + opts.attributes.size() + (opts.event_name_field.empty() ? 0 : 1) <= 64;
}

OtlpRecordForm::OtlpRecordForm(const OtlpOptions& opts)
    : records_(std::make_unique<OtlpLogRecordEncoder>(opts)),
      values_(std::make_unique<OtlpRecordValues>(records_->pointers())),
      clock_(std::make_unique<OtlpClock>())
{
    frames_.reserve(16);
    begin_batch();
}

OtlpRecordForm::~OtlpRecordForm() = default;

std::uint64_t OtlpRecordForm::malformed_bodies() const noexcept { return records_->malformed_bodies(); }

void OtlpRecordForm::start(std::string_view host, int pid)
{
    prefix_ = otlp_logs_prefix(records_->options(), host, pid);
}

void OtlpRecordForm::open_document(LineBuffer& buf)
{
    begin_batch();
    buf.append(prefix_.data(), prefix_.data() + prefix_.size());
}

void OtlpRecordForm::close_document(LineBuffer& buf, std::size_t at, std::size_t records)
{
    if (records == 0) {
        buf.resize(at);
        return;
    }
    buf.resize(buf.size() - 1);  // the last record's ','
    buf.append(otlp_logs_suffix.data(), otlp_logs_suffix.data() + otlp_logs_suffix.size());
}

void OtlpRecordForm::begin_batch()
{
    *clock_ = OtlpClock::now();
    OtlpLogRecordEncoder::head(*clock_, head_);
}

void OtlpRecordForm::begin_record(JsonLine& l) noexcept
{
    l.otlp_ = this;
    frames_.clear();
    started_ = passthrough_ = held_traceparent_ = false;
    key_match_ = {};
    values_->reset();
    trace_.reset();
}

void OtlpRecordForm::finish(LineBuffer& buf, std::size_t body)
{
    if (passthrough_) {
        scratch_.assign(buf.data() + body, buf.size() - body);
        buf.resize(body);
        records_->record(scratch_, head_, *clock_, buf);
        return;
    }
    if (!frames_.empty()) throw MalformedRecord("serialize() left an object or array open");
}

bool OtlpRecordForm::go_plain(JsonLine& l)
{
    if (started_) throw MalformedRecord("serialize() wrote more than one JSON value");
    passthrough_ = true;
    l.otlp_ = nullptr;
    return false;
}

[[gnu::always_inline]] inline void OtlpRecordForm::member_open(JsonLine& l, std::string_view name,
                                                               bool needs_no_escape)
{
    LineBuffer& out = *l.out_;
    Frame& f = frames_.back();
    if (needs_no_escape) {
        // `,{"key":"` name `","value":` in one piece.
        char* p = reserve(out, name.size() + 20);
        if (f.sep) *p++ = ',';
        p = lit(p, R"({"key":")");
        copy_short(p, name.data(), name.size());
        p = lit(p + name.size(), R"(","value":)");
        commit(out, p);
    } else {
        put(out, f.sep ? std::string_view(R"(,{"key":)") : std::string_view(R"({"key":)"));
        l.append_escaped(name);
        put(out, R"(,"value":)");
    }
    f.sep = true;
}

[[gnu::always_inline]] inline void OtlpRecordForm::match_key(std::string_view name)
{
    // Which pointers continue through this member (tokens compared only for those that may).
    const Frame& f = frames_.back();
    if (f.match == 0 || (f.key_sizes >> (name.size() % 64) & 1) == 0) [[likely]] {
        key_match_ = {};
        return;
    }
    match_key_slow(name, f.match);
}

void OtlpRecordForm::match_key_slow(std::string_view name, std::uint64_t candidates)
{
    values_->member(candidates, frames_.size(), name, key_match_.exact, key_match_.deeper);
}

bool OtlpRecordForm::key(JsonLine& l, std::string_view name, bool needs_no_escape)
{
    if (frames_.empty()) return go_plain(l);
    if (frames_.back().array) throw MalformedRecord("key() inside an array");
    if (held_traceparent_) [[unlikely]]  // the held one had no value: an ordinary member
        before_value(l);
    match_key(name);
    // The top-level traceparent is held back until its value is seen (docs/otlp.md).
    if (frames_.size() == 1 && name == "traceparent") {
        held_traceparent_ = true;
        return true;
    }
    member_open(l, name, needs_no_escape);
    return true;
}

[[gnu::always_inline]] inline char* OtlpRecordForm::field_at(JsonLine& l, std::string_view name, std::size_t room)
{
    // Not the simple case (not in OTLP mode, in an array, a held or a top-level traceparent):
    // key() and the value's own call take it.
    if (frames_.empty() || frames_.back().array || held_traceparent_) return nullptr;
    if (frames_.size() == 1 && name == "traceparent") return nullptr;
    match_key(name);
    Frame& f = frames_.back();
    char* p = reserve(*l.out_, name.size() + 20 + room);
    if (f.sep) *p++ = ',';
    f.sep = true;
    p = lit(p, R"({"key":")");
    copy_short(p, name.data(), name.size());
    return lit(p + name.size(), R"(","value":)");
}

bool OtlpRecordForm::number_field(JsonLine& l, std::string_view name, double d)
{
    char* p = field_at(l, name, 64);
    if (!p) return false;
    number_at(l, p, d);
    return true;
}

bool OtlpRecordForm::integer_field(JsonLine& l, std::string_view name, std::int64_t v)
{
    char* p = field_at(l, name, 48);
    if (!p) return false;
    integer_at(l, p, v);
    return true;
}

[[gnu::always_inline]] inline OtlpRecordForm::Match OtlpRecordForm::before_value(JsonLine& l)
{
    if (held_traceparent_) {  // not a traceparent that parses: an ordinary member
        held_traceparent_ = false;
        member_open(l, "traceparent", true);
    }
    Frame& f = frames_.back();
    if (f.array) {
        if (f.sep) l.out_->push_back(',');
        f.sep = true;
        return {};
    }
    const Match m = key_match_;
    key_match_ = {};
    return m;
}

[[gnu::always_inline]] inline void OtlpRecordForm::after_value(JsonLine& l)
{
    if (!frames_.back().array) l.out_->push_back('}');  // the KeyValue's
}

void OtlpRecordForm::note(std::uint64_t which, std::string_view text, bool any_value, double number)
{
    values_->note(which, text, any_value, number);
}

[[gnu::always_inline]] inline char* OtlpRecordForm::scalar_at(JsonLine& l, std::size_t room)
{
    if (frames_.empty()) [[unlikely]] {
        go_plain(l);
        return nullptr;
    }
    if (held_traceparent_) [[unlikely]] {  // not a traceparent that parses: an ordinary member
        held_traceparent_ = false;
        member_open(l, "traceparent", true);
    }
    Frame& f = frames_.back();
    char* p = reserve(*l.out_, room);
    if (f.array) {
        if (f.sep) *p++ = ',';
        f.sep = true;
    }
    return p;
}

[[gnu::always_inline]] inline void OtlpRecordForm::scalar_end(JsonLine& l, std::string_view text,
                                                              char* end, double number)
{
    if (key_match_.exact) [[unlikely]]
        note(key_match_.exact, text, false, number);
    key_match_ = {};
    *end++ = '}';
    if (!frames_.back().array) *end++ = '}';  // the KeyValue's
    commit(*l.out_, end);
}

bool OtlpRecordForm::integer(JsonLine& l, std::int64_t v)
{
    char* p = scalar_at(l, 48);
    if (!p) return false;
    integer_at(l, p, v);
    return true;
}

[[gnu::always_inline]] inline void OtlpRecordForm::integer_at(JsonLine& l, char* p, std::int64_t v)
{
    p = lit(p, R"({"intValue":")");
    const char* const text = p;
    auto u = static_cast<std::uint64_t>(v);
    if (v < 0) {
        *p++ = '-';
        u = ~u + 1;
    }
    p = write_uint(p, u);
    const std::string_view digits(text, static_cast<std::size_t>(p - text));
    *p++ = '"';
    scalar_end(l, digits, p);
}

bool OtlpRecordForm::unsigned_integer(JsonLine& l, std::uint64_t v)
{
    char* p = scalar_at(l, 48);
    if (!p) return false;
    // Above INT64_MAX an intValue cannot hold it: its digits as a string, none lost.
    p = v > static_cast<std::uint64_t>(INT64_MAX) ? lit(p, R"({"stringValue":")")
                                                  : lit(p, R"({"intValue":")");
    const char* const text = p;
    p = write_uint(p, v);
    const std::string_view digits(text, static_cast<std::size_t>(p - text));
    *p++ = '"';
    scalar_end(l, digits, p);
    return true;
}

bool OtlpRecordForm::number(JsonLine& l, double d)
{
    char* p = scalar_at(l, 64);
    if (!p) return false;
    number_at(l, p, d);
    return true;
}

[[gnu::always_inline]] inline void OtlpRecordForm::number_at(JsonLine& l, char* p, double d)
{
    p = lit(p, R"({"doubleValue":)");
    if (char* end = write_short_decimal(p, d)) [[likely]] {  // the common doubles
        scalar_end(l, std::string_view(p, static_cast<std::size_t>(end - p)), end, d);
        return;
    }
    number_slow(l, p, d);
}

void OtlpRecordForm::number_slow(JsonLine& l, char* p, double d)
{
    // Any other: JsonLine's own spelling (fmt's shortest round trip, Python's ".0").
    LineBuffer& out = *l.out_;
    commit(out, p);
    const std::size_t text = out.size();
    l.otlp_ = nullptr;
    l.need_comma_ = false;
    l.value(d);
    l.otlp_ = this;
    char* end = reserve(out, 2);
    scalar_end(l, std::string_view(out.data() + text, out.size() - text), end, d);
}

bool OtlpRecordForm::boolean(JsonLine& l, bool b)
{
    char* p = scalar_at(l, 24);
    if (!p) return false;
    p = lit(p, R"({"boolValue":)");
    const char* const text = p;
    p = b ? lit(p, "true") : lit(p, "false");
    scalar_end(l, std::string_view(text, static_cast<std::size_t>(p - text)), p);
    return true;
}

bool OtlpRecordForm::string(JsonLine& l, std::string_view s)
{
    // The top-level traceparent, when it parses, becomes traceId/spanId/flags (docs/otlp.md).
    if (held_traceparent_) {
        if (auto trace = TraceContext::parse_traceparent(s)) {
            trace_ = trace;
            held_traceparent_ = false;
            key_match_ = {};
            return true;
        }
    }
    char* p = scalar_at(l, 16);
    if (!p) return false;
    LineBuffer& out = *l.out_;
    p = lit(p, R"({"stringValue":)");
    commit(out, p);
    const std::size_t text = out.size();
    l.append_escaped(s);  // JSON Lines' escaping, quotes included
    char* end = reserve(out, 2);
    scalar_end(l, std::string_view(out.data() + text, out.size() - text), end);
    return true;
}

bool OtlpRecordForm::null(JsonLine& l)
{
    char* p = scalar_at(l, 4);
    if (!p) return false;
    *p++ = '{';
    scalar_end(l, "null", p);
    return true;
}

bool OtlpRecordForm::raw(JsonLine& l, std::string_view json)
{
    if (frames_.empty()) return go_plain(l);  // a record given as JSON text: finish() converts it
    const Match m = before_value(l);
    if (!records_->any_value(json, *l.out_)) throw MalformedRecord("raw() text is not one JSON value");
    if (m.exact) note(m.exact, json, false);
    // Pointers that go on inside the raw value are looked up in it.
    const std::size_t depth = frames_.size();
    for (std::uint64_t d = m.deeper & ~values_->found(); d; d &= d - 1) {
        const auto i = static_cast<std::size_t>(std::countr_zero(d));
        if (const std::string_view v = records_->value_at(json, values_->pointer_from(i, depth)); !v.empty())
            note(std::uint64_t{1} << i, v, false);
    }
    after_value(l);
    return true;
}

void OtlpRecordForm::open_container(JsonLine& l, bool array)
{
    Frame next;
    next.array = array;
    if (frames_.empty()) {
        // The record itself: the log record's head, then its body.
        started_ = true;
        put(*l.out_, head_);
        next.match = values_->all();
    } else {
        const Match m = before_value(l);
        next.match = array ? 0 : m.deeper;
        next.exact = m.exact;
    }
    // The sizes of the keys its members may continue a pointer with: most keys are rejected
    // by their size alone (match_key()).
    if (next.match) next.key_sizes = values_->key_sizes(next.match, frames_.size() + 1);
    char* p = reserve(*l.out_, 32);
    next.span_at = l.out_->size();
    commit(*l.out_, array ? lit(p, R"({"arrayValue":{"values":[)") : lit(p, R"({"kvlistValue":{"values":[)"));
    frames_.push_back(next);
}

bool OtlpRecordForm::close_container(JsonLine& l)
{
    LineBuffer& out = *l.out_;
    commit(out, lit(reserve(out, 4), "]}}"));
    const Frame f = frames_.back();
    frames_.pop_back();
    if (frames_.empty()) {
        // The record's end: the fields taken from it follow its body.
        records_->tail(values_->values(), trace_, *clock_, out);
        return true;
    }
    if (f.exact) note(f.exact, std::string_view(out.data() + f.span_at, out.size() - f.span_at), true);
    after_value(l);
    return true;
}

bool OtlpRecordForm::begin_object(JsonLine& l)
{
    if (frames_.empty() && started_) return go_plain(l);
    open_container(l, false);
    return true;
}

bool OtlpRecordForm::begin_array(JsonLine& l)
{
    if (frames_.empty()) return go_plain(l);
    open_container(l, true);
    return true;
}

bool OtlpRecordForm::end_object(JsonLine& l)
{
    if (frames_.empty()) return go_plain(l);
    if (frames_.back().array) throw MalformedRecord("end_object() closes an array");
    return close_container(l);
}

bool OtlpRecordForm::end_array(JsonLine& l)
{
    if (frames_.empty()) return go_plain(l);
    if (!frames_.back().array) throw MalformedRecord("end_array() closes an object");
    return close_container(l);
}

}  // namespace jsonlw::detail
