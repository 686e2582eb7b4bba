// RawJsonText: the record RawJsonWriter queues — one JSON text, its bytes either in the record
// itself (up to inline_capacity, so a queue cell is a slot of a byte ring the writer owns) or
// in a std::string moved in by the caller. Made by the caller's thread, read by the writer's
// serializer threads; a value type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

namespace jsonlw {

class RawJsonText {
public:
    // A queue cell of 512 bytes: the text's bytes, its length, a std::string for longer ones.
    static constexpr std::size_t inline_capacity = 456;
    // simdjson reads up to this many bytes past a text: an inline text that leaves them free
    // is parsed where it lies.
    static constexpr std::size_t parse_padding = 64;

    // What validating the text on the submitting thread found (JsonTextWriter does, for a
    // short text, while the writer is behind: raw_json_encoder.hpp), so the encoder does not
    // parse it again; `unchecked` for every other text.
    enum class Checked : std::uint8_t { unchecked, compact, minify, not_object, invalid };
    // A verdict only RawJsonEncoder::check_on_submit() makes (a default one is `unchecked`),
    // so no caller can have a text written unparsed by claiming it valid.
    class Check {
    public:
        Check() noexcept = default;
        Checked verdict() const noexcept { return verdict_; }
        std::uint8_t error() const noexcept { return error_; }  // invalid: simdjson's error_code

    private:
        friend class RawJsonEncoder;
        Check(Checked verdict, std::uint8_t error) noexcept : verdict_(verdict), error_(error) {}
        Checked verdict_ = Checked::unchecked;
        std::uint8_t error_ = 0;
    };

    RawJsonText() noexcept = default;
    // Copies bytes known to fit (text.size() <= inline_capacity): never allocates.
    struct fits_inline_t {};
    RawJsonText(fits_inline_t, std::string_view text) noexcept : size_(text.size()), inline_(true)
    {
        std::memcpy(bytes_, text.data(), text.size());
    }
    // The same, with what RawJsonEncoder::check_on_submit() found out about the text.
    RawJsonText(fits_inline_t, std::string_view text, Check check) noexcept
        : size_(text.size()), inline_(true), check_(check)
    {
        std::memcpy(bytes_, text.data(), text.size());
    }
    // Copies the bytes: into the record when they fit (no allocation), else into a string.
    RawJsonText(std::string_view text) { assign(text); }
    RawJsonText(const char* text) : RawJsonText(std::string_view(text)) {}
    RawJsonText(const std::string& text) : RawJsonText(std::string_view(text)) {}
    // Takes the string's buffer whatever its length (no copy; freed on the writer's thread).
    struct take_buffer_t {};
    RawJsonText(take_buffer_t, std::string&& text) noexcept
        : heap_(std::move(text)), size_(heap_.size())
    {
    }
    // A text of up to inline_capacity bytes is copied into the record, as a view is: the
    // string keeps its buffer, freed by its owner on the thread that allocated it, from
    // glibc's per-thread cache without a lock — handed over, the buffer would be freed on
    // the writer's thread, into the allocating thread's arena under that arena's lock
    // (docs/queue.md). A longer text's buffer is taken (no copy; freed on the writer's
    // thread).
    RawJsonText(std::string&& text) noexcept : size_(text.size())
    {
        if (size_ <= inline_capacity) {
            inline_ = true;
            std::memcpy(bytes_, text.data(), size_);
        } else {
            heap_ = std::move(text);
        }
    }

    RawJsonText(RawJsonText&& o) noexcept
        : heap_(std::move(o.heap_)), size_(o.size_), inline_(o.inline_), check_(o.check_)
    {
        if (inline_) std::memcpy(bytes_, o.bytes_, size_);
    }
    RawJsonText& operator=(RawJsonText&& o) noexcept
    {
        heap_ = std::move(o.heap_);
        size_ = o.size_;
        inline_ = o.inline_;
        check_ = o.check_;
        if (inline_) std::memcpy(bytes_, o.bytes_, size_);
        return *this;
    }
    RawJsonText(const RawJsonText& o)
        : heap_(o.heap_), size_(o.size_), inline_(o.inline_), check_(o.check_)
    {
        if (inline_) std::memcpy(bytes_, o.bytes_, size_);
    }
    RawJsonText& operator=(const RawJsonText& o)
    {
        if (this != &o) *this = RawJsonText(o);
        return *this;
    }

    const char* data() const noexcept { return inline_ ? bytes_ : heap_.data(); }
    std::size_t size() const noexcept { return size_; }
    bool empty() const noexcept { return size_ == 0; }
    std::string_view view() const noexcept { return {data(), size_}; }
    operator std::string_view() const noexcept { return view(); }
    // Whether `parse_padding` readable bytes follow the text (simdjson can parse it in place).
    bool padded() const noexcept
    {
        return inline_ ? size_ + parse_padding <= inline_capacity
                       : heap_.capacity() - heap_.size() >= parse_padding;
    }
    bool is_inline() const noexcept { return inline_; }
    Check check() const noexcept { return check_; }

    friend bool operator==(const RawJsonText& a, std::string_view b) noexcept
    {
        return a.view() == b;
    }

private:
    void assign(std::string_view text)
    {
        size_ = text.size();
        if (text.size() <= inline_capacity) {
            inline_ = true;
            std::memcpy(bytes_, text.data(), text.size());
        } else {
            heap_.assign(text);
        }
    }

    std::string heap_;
    std::size_t size_ = 0;
    bool inline_ = false;
    Check check_{};
    char bytes_[inline_capacity];
};

// With the ring's sequence number: a queue cell of 512 bytes.
static_assert(sizeof(RawJsonText) <= 512 - 8);

}  // namespace jsonlw
