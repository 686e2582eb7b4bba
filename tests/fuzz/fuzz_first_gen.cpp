// libFuzzer target: the first_gen_logits decoder. Any text as an item or a list → never a
// crash; a decoded item is self-consistent (shape [n, V], bytes == n * V * itemsize) and, for
// n == 1, re-encodes to an item that decodes to the same dtype, shape and bytes; a refusal
// has a one-line reason that starts with "first_gen_logits".
#include <jsonlw/snapshot/first_gen.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

void check_item(const jsonlw::snapshot::DecodedFirstGen& d)
{
    using namespace jsonlw::snapshot;
    if (d.shape.size() != 2 || d.shape[0] < 0 || d.shape[1] < 0) std::abort();
    const auto n = static_cast<std::size_t>(d.shape[0]) * static_cast<std::size_t>(d.shape[1]);
    if (d.bytes.size() != n * itemsize(d.dtype) || d.size() != n) std::abort();
    for (std::size_t i = 0; i < n && i < 64; ++i) (void)d.element(i);
    if (d.shape[0] != 1) return;
    std::string text;
    append_first_gen_item(text, d.bytes, dtype_name(d.dtype), d.shape[1]);
    DecodedFirstGen again;
    std::string error;
    if (!decode_first_gen_item(text, again, error)) std::abort();
    if (again.dtype != d.dtype || again.shape != d.shape || again.bytes != d.bytes) std::abort();
}

void check_error(const std::string& error)
{
    if (error.rfind("first_gen_logits", 0) != 0 || error.find('\n') != std::string::npos) {
        std::fprintf(stderr, "bad error text: \"%s\"\n", error.c_str());
        std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    using namespace jsonlw::snapshot;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    std::string error;
    DecodedFirstGen item;
    if (decode_first_gen_item(text, item, error)) check_item(item);
    else check_error(error);

    std::vector<DecodedFirstGen> list;
    error.clear();
    if (decode_first_gen_list(text, list, error)) {
        for (const auto& d : list) check_item(d);
    } else {
        check_error(error);
    }
    return 0;
}
