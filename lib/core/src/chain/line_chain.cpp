#include <jsonlw/line_chain.hpp>

#include "chain_hash.hpp"
#include "sealed_line.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace jsonlw {

ChainKey ChainKey::from_file(const std::filesystem::path& path)
{
    auto fail = [&](const std::string& why) {
        throw std::invalid_argument("chain key file " + path.string() + ": " + why);
    };
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(std::string("cannot be opened: ") + std::strerror(errno));
    ChainKey key;
    key.bytes.resize(max_bytes + 1);
    in.read(key.bytes.data(), static_cast<std::streamsize>(key.bytes.size()));
    if (in.bad()) fail("cannot be read");
    key.bytes.resize(static_cast<std::size_t>(in.gcount()));
    if (key.bytes.empty()) fail("is empty");
    if (key.bytes.size() > max_bytes) fail("holds more than 1 MiB");
    return key;
}

LineChain::LineChain(ChainMode mode, std::optional<ChainKey> key, std::string start)
    : mode_(mode), prev_(std::move(start))
{
    detail::check_chain_setup(mode, key, prev_, "LineChain");
    if (mode != ChainMode::none) hash_ = std::make_unique<detail::ChainHash>(mode, key);
}

LineChain::LineChain(LineChain&&) noexcept = default;
LineChain& LineChain::operator=(LineChain&&) noexcept = default;
LineChain::~LineChain() = default;

void LineChain::seal(std::string& out, std::string_view line)
{
    const bool newline = !line.empty() && line.back() == '\n';
    const std::string_view body = newline ? line.substr(0, line.size() - 1) : line;
    if (body.size() < 2 || body.front() != '{' || body.back() != '}')
        throw std::invalid_argument("LineChain::seal: the line is not one JSON object");
    if (mode_ == ChainMode::none) {
        out.append(line);
        return;
    }
    char value[64];
    hash_->value(prev_, body, value);
    const std::string_view head = body.substr(0, body.size() - 1);
    out.append(head);
    if (!detail::is_empty_object_head(head)) out.push_back(',');
    out.append(detail::chain_key_open);
    out.append(value, sizeof value);
    out.append("\"}");
    if (newline) out.push_back('\n');
    prev_.assign(value, sizeof value);
}

void LineChain::resume(std::string_view value)
{
    if (!detail::is_chain_value(value))
        throw std::invalid_argument("LineChain::resume: not 64 lowercase hex digits");
    prev_.assign(value);
}

}  // namespace jsonlw
