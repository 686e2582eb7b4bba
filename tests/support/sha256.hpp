// SHA-256 in lowercase hex, from libcrypto's one-shot EVP_Digest: what the Capture::metadata
// tests recompute a line's digests with, independently of the writers' ContentDigest.
#pragma once

#include <openssl/evp.h>

#include <string>
#include <string_view>

namespace jsonlw_test {

inline std::string sha256_hex(std::string_view bytes)
{
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (EVP_Digest(bytes.data(), bytes.size(), d, &n, EVP_sha256(), nullptr) != 1) return {};
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < n; ++i) {
        out += hex[d[i] >> 4];
        out += hex[d[i] & 0xF];
    }
    return out;
}

}  // namespace jsonlw_test
