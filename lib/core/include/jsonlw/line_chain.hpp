// The line hash chain: each JSON Lines record ends with a "chain" key whose value commits to
// this line's bytes and to the line before it, so an edited, inserted, deleted, reordered or
// torn line is found by recomputing (the idea of AWS CloudTrail log file integrity validation
// and of RFC 5848's signature blocks, applied per line). Format and guarantees: docs/chain.md.
// Writers turn it on with WriterOptions::chain (ChainSink seals their lines).
//
// The exact bytes: a sealed line is the caller's line L (a JSON object, without its newline)
// with `,"chain":"<V>"` inserted before L's final `}` (only `"chain":"<V>"` when L is an
// empty object: `{`, JSON whitespace, `}`), then the newline if the caller's line had one. V is the lowercase hex of
//     SHA-256(P || L)              for ChainMode::sha256,
//     HMAC-SHA256(key, P || L)     for ChainMode::hmac_sha256 (RFC 2104),
// where P is the previous line's V as its 64 ASCII hex characters (for a file's first line:
// the V the writer's previous file ended with, or 64 ASCII '0's) and L is exactly the bytes
// of the line with the key and the newline removed. A verifier recovers L by removing
// `,"chain":"<V>"` before the final `}` (or `"chain":"<V>"` when only `{` and JSON whitespace
// come before it).
#pragma once

#include <cstddef>
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace jsonlw {

enum class ChainMode {
    // No chain: seal() copies lines unchanged.
    none,
    // SHA-256 without a key: finds accidental or outsider edits if the last value is kept
    // somewhere the editor cannot reach (docs/chain.md).
    sha256,
    // HMAC-SHA256 with a secret key: only a holder of the key can compute a valid chain.
    hmac_sha256,
};

// The HMAC key: raw bytes, used as they are (no trimming of a trailing newline).
struct ChainKey {
    std::string bytes;

    // Reads the whole file. Throws std::invalid_argument naming the path and the reason when
    // it cannot be read, is empty, or holds more than max_bytes.
    static ChainKey from_file(const std::filesystem::path& path);
    static constexpr std::size_t max_bytes = std::size_t{1} << 20;
};

namespace detail {
class ChainHash;
}

// Seals lines for one writer: one object per writer, used by one thread at a time; it owns
// its libcrypto contexts (made once, reused line after line) and a copy of the key.
class LineChain {
public:
    // Throws std::invalid_argument for hmac_sha256 without a key, a key in another mode, or a
    // start that is not 64 lowercase hex digits.
    LineChain(ChainMode mode, std::optional<ChainKey> key,
              std::string start = std::string(64, '0'));
    LineChain(LineChain&&) noexcept;
    LineChain& operator=(LineChain&&) noexcept;
    ~LineChain();

    // Appends `line` (one JSON object: starts with `{`, ends with `}`, optionally then `\n`)
    // to `out` with the chain key inserted as above, and makes its value last(). Throws
    // std::invalid_argument when `line` is not so shaped; then neither `out` nor last() change.
    void seal(std::string& out, std::string_view line);

    // The value of the last sealed line (the start value before any): what the writer's next
    // file begins from.
    const std::string& last() const noexcept { return prev_; }
    // Makes `value` (64 lowercase hex digits) the value the next line chains onto: a sink that
    // sealed lines which then did not land goes back to the last that did. Throws
    // std::invalid_argument for any other value.
    void resume(std::string_view value);

private:
    ChainMode mode_;
    std::unique_ptr<detail::ChainHash> hash_;
    std::string prev_;
};

// The first place where a chain does not verify.
struct ChainBreak {
    enum class Kind {
        // The line's bytes do not give its chain value, yet the next line chains onto that
        // value: the line was changed, or the line(s) just before it were deleted; the chain
        // cannot tell these two apart (detail says so).
        edited,
        // A later line chains onto the line before this one: this line and those up to that
        // later one are not part of the chain (inserted; or what was there was replaced).
        deleted_or_inserted,
        // This line chains onto the value of a line that comes after it.
        reordered,
        // The last line has no newline (a torn write or a cut file).
        truncated,
        // The line ends without a `"chain":"<64 hex>"` key before its final `}`.
        missing_key,
        // The line does not start with `{` and end with `}` (empty, or not an object).
        not_json_object,
    };
    std::size_t line;  // 1-based
    Kind kind;
    std::string detail;
};

// Recomputes a file's chain line by line from `prev` (in: the start value; out: the value of
// the last line that verified) and returns the first break, or nullopt when every line
// verifies. Lines after a break are read into memory to classify it. Throws
// std::invalid_argument for ChainMode::none, hmac_sha256 without a key, a key in another mode,
// or a prev that is not 64 lowercase hex digits.
std::optional<ChainBreak> verify_chain(std::istream& lines, ChainMode mode,
                                       const std::optional<ChainKey>& key, std::string& prev);

}  // namespace jsonlw
