// libFuzzer target: the strict base64 codec of first_gen_logits. Any text → decode never
// crashes; what it accepts re-encodes to exactly that text (the canonical encoding), what it
// refuses has a one-line reason. The same bytes as data → encode → decode gives them back.
#include <jsonlw/snapshot/base64.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    using namespace jsonlw::snapshot;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    std::vector<std::byte> out;
    std::string error;
    if (base64_decode(text, out, error)) {
        std::string again;
        base64_append(again, out);
        if (again != text) std::abort();
    } else if (error.empty() || error.find('\n') != std::string::npos) {
        std::abort();
    }

    const auto bytes = std::as_bytes(std::span(data, size));
    std::string enc;
    base64_append(enc, bytes);
    if (enc.size() != base64_encoded_size(size)) std::abort();
    std::vector<std::byte> back;
    if (!base64_decode(enc, back, error)) std::abort();
    if (back.size() != size || !std::equal(back.begin(), back.end(), bytes.begin())) std::abort();
    return 0;
}
