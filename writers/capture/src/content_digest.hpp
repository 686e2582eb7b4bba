// ContentDigest: the SHA-256 that Capture::metadata writes in place of content, from
// OpenSSL's libcrypto (EVP; https://docs.openssl.org/3.0/man3/EVP_DigestInit/), never a hash
// of our own. One object per thread that serializes — the raw-output encoder keeps one per
// serializer slot, the request trace's encoder one for its I/O thread — reused record after
// record: its EVP_MD_CTX and the fetched SHA-256 implementation are made once. Which bytes
// each field's digest covers is docs/writers.md's ("Content capture").
#pragma once

#include <jsonlw/detail/hex.hpp>
#include <jsonlw/json_line.hpp>

#include <openssl/evp.h>

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace jsonlw::detail {

class ContentDigest {
public:
    ContentDigest()
        : md_(EVP_MD_fetch(nullptr, "SHA256", nullptr)), ctx_(EVP_MD_CTX_new())
    {
        if (md_ == nullptr || ctx_ == nullptr) {
            release();
            throw std::runtime_error("libcrypto: SHA-256 is not available");
        }
    }
    ContentDigest(ContentDigest&& o) noexcept
        : md_(std::exchange(o.md_, nullptr)), ctx_(std::exchange(o.ctx_, nullptr))
    {
    }
    ContentDigest& operator=(ContentDigest&&) = delete;
    ContentDigest(const ContentDigest&) = delete;
    ~ContentDigest() { release(); }

    // Starts a digest (and its byte count) over.
    void begin()
    {
        check(EVP_DigestInit_ex2(ctx_, md_, nullptr));
        bytes_ = 0;
    }
    // Adds bytes as they are.
    void update(std::string_view bytes)
    {
        if (bytes.empty()) return;
        check(EVP_DigestUpdate(ctx_, bytes.data(), bytes.size()));
        bytes_ += bytes.size();
    }
    // Adds a string's bytes as a JSON reader decodes them from the line JsonLine::string()
    // writes (invalid UTF-8 replaced by U+FFFD); returns whether anything was replaced.
    bool update_text(std::string_view s)
    {
        return decoded_string_pieces(s, [this](std::string_view piece) { update(piece); });
    }
    // Bytes added since begin().
    std::size_t bytes() const noexcept { return bytes_; }
    // Ends the digest and writes it as `key`: 64 lowercase hex digits.
    void field(JsonLine& line, std::string_view key)
    {
        unsigned char d[32];
        unsigned int n = 0;
        check(EVP_DigestFinal_ex(ctx_, d, &n));
        if (n != sizeof d) throw std::runtime_error("libcrypto: SHA-256 gave a digest of another size");
        std::array<char, 64> out;
        write_hex_lower(d, sizeof d, out.data());
        line.field(key, std::string_view(out.data(), out.size()));
    }

private:
    static void check(int ok)
    {
        if (ok != 1) throw std::runtime_error("libcrypto: SHA-256 failed");
    }
    void release() noexcept
    {
        EVP_MD_CTX_free(ctx_);
        EVP_MD_free(md_);
        ctx_ = nullptr;
        md_ = nullptr;
    }

    EVP_MD* md_;
    EVP_MD_CTX* ctx_;
    std::size_t bytes_ = 0;
};

}  // namespace jsonlw::detail
