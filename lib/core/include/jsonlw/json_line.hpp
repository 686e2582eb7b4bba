// JsonLine: the builder of one compact JSON line, writing straight into a batch buffer.
#pragma once

#include <jsonlw/malformed_record.hpp>

#include <fmt/format.h>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace jsonlw {

namespace detail {
class OtlpRecordForm;
}

// The buffer lines are built in (fmt's growable buffer; a writer reuses one per batch).
using LineBuffer = fmt::memory_buffer;

// A member name known when compiling, written "name"_key: checked then to need no escaping
// (no control character, '"', '\\' or byte >= 0x80), so JsonLine::key() copies it as is.
// A parameter of type JsonKey takes a string literal as is.
class JsonKey {
public:
    template <std::size_t N>
    consteval JsonKey(const char (&s)[N]) : JsonKey(s, N - 1)
    {
    }
    consteval JsonKey(const char* s, std::size_t n) : name_(s, n)
    {
        for (const char c : name_) {
            const auto u = static_cast<unsigned char>(c);
            if (u < 0x20 || u >= 0x80 || c == '"' || c == '\\')
                throw "a JsonKey must need no escaping";  // a compile error where it is used
        }
    }
    constexpr std::string_view name() const noexcept { return name_; }

private:
    std::string_view name_;
};

inline namespace literals {
consteval JsonKey operator""_key(const char* s, std::size_t n) { return JsonKey(s, n); }
}  // namespace literals

// Builds one JSON value — normally an object — at the end of a LineBuffer. Commas and colons
// are placed for you: call key() before each member value, nothing between array elements.
// Strings are escaped per RFC 8259; invalid UTF-8 is replaced by U+FFFD and sanitized()
// becomes true (the record is kept). Doubles are written in shortest round-trip form,
// spelled as Python's repr() (1000.0, 0.1, 1e+21: a double always reads back as a float);
// a non-finite double throws MalformedRecord unless written with number_or_null().
// The engine's JsonLine under LineFormat::otlp writes the same calls as an OTLP log record
// (docs/otlp.md). Not thread-safe; lives for one record.
class JsonLine {
public:
    explicit JsonLine(LineBuffer& out) noexcept : out_(&out), start_(out.size()) {}
    // The engine's: the record is written as an OTLP log record by `otlp` when it is not null
    // (WriterOptions::format, detail/otlp_record_form.hpp); the calls are the same.
    JsonLine(LineBuffer& out, detail::OtlpRecordForm* otlp) noexcept;

    JsonLine& begin_object();
    JsonLine& end_object();
    JsonLine& begin_array();
    JsonLine& end_array();
    JsonLine& key(std::string_view name);
    // Exactly a JsonKey ("name"_key): a literal key("name") stays the string_view overload.
    template <std::same_as<JsonKey> K>
    JsonLine& key(K name)
    {
        if (otlp_) [[unlikely]]
            return otlp_key(name.name(), true);
        plain_key(name.name());
        last_key_ = name.name();
        need_comma_ = false;
        return *this;
    }

    JsonLine& string(std::string_view s);
    JsonLine& value(std::string_view s) { return string(s); }
    JsonLine& value(const char* s) { return string(s); }
    JsonLine& value(bool b);
    JsonLine& value(std::nullptr_t) { return null(); }
    JsonLine& value(double d);
    JsonLine& value(float f) { return value(static_cast<double>(f)); }
    template <std::integral T>
        requires(!std::same_as<T, bool> && !std::same_as<T, char>)
    JsonLine& value(T v)
    {
        if constexpr (std::is_signed_v<T>) return integer(static_cast<std::int64_t>(v));
        else return unsigned_integer(static_cast<std::uint64_t>(v));
    }
    JsonLine& null();
    // A non-finite double becomes null instead of making the record malformed.
    JsonLine& number_or_null(double d);
    // Trusted JSON text (already valid and compact), copied as is.
    JsonLine& raw(std::string_view json);

    template <class T>
    JsonLine& field(std::string_view name, const T& v)
    {
        key(name);
        return value(v);
    }
    template <std::same_as<JsonKey> K, class T>
    JsonLine& field(K name, const T& v)
    {
        if constexpr (std::is_same_v<T, double>) {
            return plain_field(name.name(), v);
        } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T> &&
                             !std::is_same_v<T, char>) {
            return plain_field(name.name(), static_cast<std::int64_t>(v));
        } else {
            key(name);
            return value(v);
        }
    }

    std::string_view view() const noexcept
    {
        return {out_->data() + start_, out_->size() - start_};
    }
    bool sanitized() const noexcept { return sanitized_; }
    // Counts the record as sanitized (a writer that repaired raw text, say).
    void mark_sanitized() noexcept { sanitized_ = true; }
    // Drops what this line wrote so far (the buffer returns to where the line began).
    void discard() noexcept;

private:
    friend class detail::OtlpRecordForm;
    JsonLine& otlp_key(std::string_view name, bool needs_no_escape);

    JsonLine& integer(std::int64_t v);
    JsonLine& unsigned_integer(std::uint64_t v);
    void separate();
    void append_escaped(std::string_view s);
    void plain_key(std::string_view name);
    JsonLine& plain_field(std::string_view name, double d);
    JsonLine& plain_field(std::string_view name, std::int64_t v);
    [[noreturn]] void non_finite(double d) const;
    void write_double(char* p, double d);

    LineBuffer* out_;
    std::size_t start_;
    std::string_view last_key_{};
    bool need_comma_ = false;
    bool sanitized_ = false;
    detail::OtlpRecordForm* otlp_ = nullptr;  // OTLP mode while set (the engine's)
    detail::OtlpRecordForm* form_ = nullptr;  // the form this line began with
};

// The UTF-8 bytes a JSON reader gets back from the string JsonLine::string(s) writes: s
// itself when it is valid UTF-8, else s with each maximal invalid subpart replaced by U+FFFD,
// as string() replaces it. Handed to `piece` in order, in pieces (no allocation); returns
// whether anything was replaced. For digests of what a line would hold (raw output's and the
// request trace's Capture::metadata, docs/writers.md).
bool decoded_string_pieces(std::string_view s, void (*piece)(void* ctx, std::string_view bytes),
                           void* ctx);
template <class F>
bool decoded_string_pieces(std::string_view s, F&& piece)
{
    using Fn = std::remove_reference_t<F>;
    return decoded_string_pieces(
        s, [](void* ctx, std::string_view bytes) { (*static_cast<Fn*>(ctx))(bytes); },
        const_cast<void*>(static_cast<const void*>(&piece)));
}

}  // namespace jsonlw
