// ChainHash: one chain value, V = H(P || L) as 64 lowercase hex digits, from OpenSSL's
// libcrypto (EVP_Digest*: https://docs.openssl.org/3.0/man3/EVP_DigestInit/; EVP_MAC with
// "HMAC": https://docs.openssl.org/3.0/man7/EVP_MAC-HMAC/). Owned by one LineChain or one
// verify_chain call, so used by one thread at a time. Its contexts are made once and
// re-initialised per value; we allocate nothing per value, libcrypto's init calls may.
#pragma once

#include <jsonlw/line_chain.hpp>

#include <openssl/evp.h>

#include <string>
#include <string_view>

namespace jsonlw::detail {

class ChainHash {
public:
    // mode is sha256 or hmac_sha256; key must be set exactly for hmac_sha256 (the caller
    // checks, check_chain_setup below).
    ChainHash(ChainMode mode, const std::optional<ChainKey>& key);
    ChainHash(const ChainHash&) = delete;
    ChainHash& operator=(const ChainHash&) = delete;
    ~ChainHash();

    // Writes V for prev (64 hex characters) and body into out[0..64).
    void value(std::string_view prev, std::string_view body, char* out);

private:
    void release() noexcept;

    std::string key_;
    EVP_MD* md_ = nullptr;
    EVP_MD_CTX* md_ctx_ = nullptr;
    EVP_MAC* mac_ = nullptr;
    EVP_MAC_CTX* mac_ctx_ = nullptr;
};

// Throws std::invalid_argument unless mode, key and a 64-lowercase-hex start value fit
// together; `what` names the caller in the message.
void check_chain_setup(ChainMode mode, const std::optional<ChainKey>& key,
                       std::string_view start, std::string_view what);

bool is_chain_value(std::string_view s) noexcept;

}  // namespace jsonlw::detail
