#include "chain_hash.hpp"

#include <jsonlw/detail/hex.hpp>

#include <openssl/core_names.h>
#include <openssl/params.h>

#include <algorithm>
#include <stdexcept>

namespace jsonlw::detail {

namespace {

void check(int ok, const char* step)
{
    if (ok != 1) throw std::runtime_error(std::string("libcrypto: ") + step + " failed");
}

}  // namespace

ChainHash::ChainHash(ChainMode mode, const std::optional<ChainKey>& key)
{
    if (mode == ChainMode::hmac_sha256) {
        key_ = key->bytes;
        mac_ = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
        mac_ctx_ = mac_ != nullptr ? EVP_MAC_CTX_new(mac_) : nullptr;
        char digest[] = "SHA256";
        const OSSL_PARAM params[] = {
            OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
            OSSL_PARAM_construct_end(),
        };
        if (mac_ctx_ == nullptr || EVP_MAC_CTX_set_params(mac_ctx_, params) != 1) {
            release();
            throw std::runtime_error("libcrypto: HMAC-SHA256 is not available");
        }
    } else {
        md_ = EVP_MD_fetch(nullptr, "SHA256", nullptr);
        md_ctx_ = EVP_MD_CTX_new();
        if (md_ == nullptr || md_ctx_ == nullptr) {
            release();
            throw std::runtime_error("libcrypto: SHA-256 is not available");
        }
    }
}

ChainHash::~ChainHash() { release(); }

void ChainHash::release() noexcept
{
    EVP_MAC_CTX_free(mac_ctx_);
    EVP_MAC_free(mac_);
    EVP_MD_CTX_free(md_ctx_);
    EVP_MD_free(md_);
    mac_ctx_ = nullptr;
    mac_ = nullptr;
    md_ctx_ = nullptr;
    md_ = nullptr;
}

void ChainHash::value(std::string_view prev, std::string_view body, char* out)
{
    unsigned char d[EVP_MAX_MD_SIZE];
    std::size_t n = 0;
    if (mac_ctx_ != nullptr) {
        const auto* k = reinterpret_cast<const unsigned char*>(key_.data());
        check(EVP_MAC_init(mac_ctx_, k, key_.size(), nullptr), "EVP_MAC_init");
        check(EVP_MAC_update(mac_ctx_, reinterpret_cast<const unsigned char*>(prev.data()),
                             prev.size()), "EVP_MAC_update");
        check(EVP_MAC_update(mac_ctx_, reinterpret_cast<const unsigned char*>(body.data()),
                             body.size()), "EVP_MAC_update");
        check(EVP_MAC_final(mac_ctx_, d, &n, sizeof d), "EVP_MAC_final");
    } else {
        unsigned int len = 0;
        check(EVP_DigestInit_ex2(md_ctx_, md_, nullptr), "EVP_DigestInit_ex2");
        check(EVP_DigestUpdate(md_ctx_, prev.data(), prev.size()), "EVP_DigestUpdate");
        check(EVP_DigestUpdate(md_ctx_, body.data(), body.size()), "EVP_DigestUpdate");
        check(EVP_DigestFinal_ex(md_ctx_, d, &len), "EVP_DigestFinal_ex");
        n = len;
    }
    if (n != 32) throw std::runtime_error("libcrypto: SHA-256 gave a value of another size");
    detail::write_hex_lower(d, n, out);
}

bool is_chain_value(std::string_view s) noexcept
{
    return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    });
}

void check_chain_setup(ChainMode mode, const std::optional<ChainKey>& key,
                       std::string_view start, std::string_view what)
{
    auto fail = [&](std::string_view why) {
        throw std::invalid_argument(std::string(what) + ": " + std::string(why));
    };
    if (mode == ChainMode::hmac_sha256 && !key) fail("chain mode hmac-sha256 needs a key");
    if (mode == ChainMode::hmac_sha256 && key->bytes.empty()) fail("the chain key is empty");
    if (mode != ChainMode::hmac_sha256 && key) fail("a chain key is only for mode hmac-sha256");
    if (!is_chain_value(start)) fail("the start value is not 64 lowercase hex digits");
}

}  // namespace jsonlw::detail
