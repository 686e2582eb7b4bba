// Base64 (RFC 4648, standard alphabet, '=' padding) for first_gen_logits rows. The encoder is
// table-driven because one bf16 row of 152k logits is 400 KB of text. The decoder is strict
// where Python's b64decode is not: it accepts exactly the text the encoder writes for some
// input, so a corrupted or re-encoded payload is an error with a reason instead of silent data.
// Pure functions; safe from any thread.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace jsonlw::snapshot {

// Characters the encoding of n bytes takes: 4 * ceil(n / 3).
constexpr std::size_t base64_encoded_size(std::size_t n) noexcept { return (n + 2) / 3 * 4; }

// Writes exactly base64_encoded_size(in.size()) characters at out (no terminator).
void base64_encode(std::span<const std::byte> in, char* out) noexcept;

// Appends the encoding of in to out (one resize, then base64_encode in place).
void base64_append(std::string& out, std::span<const std::byte> in);

// Replaces out with the bytes text encodes. Accepts only: the characters A-Z a-z 0-9 + /, a
// length that is a multiple of 4, '=' only as the last one or two characters, and zero unused
// bits before the padding (the canonical encoding). Otherwise returns false, leaves out
// unspecified and sets error to one line naming the offset and the fault, e.g.
// "base64: invalid character '-' (0x2d) at offset 5".
bool base64_decode(std::string_view text, std::vector<std::byte>& out, std::string& error);

}  // namespace jsonlw::snapshot
