// ChainManifestWriter: appends the events of one ChainSink to its manifest
// (<directory>/<stem>.chain; format in <jsonlw/chain_manifest.hpp>) through the writer's FileIo
// seam. Owned by the ChainSink and called from the writer's I/O thread (and close()'s), one
// call at a time; owns the manifest's descriptor. A failed write is logged once and counted,
// never fatal to records: the lines still carry their chain, only the manifest misses an event.
#pragma once

#include <jsonlw/line_chain.hpp>
#include <jsonlw/sinks/line_sink.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace jsonlw::detail {

class ChainManifestWriter {
public:
    ChainManifestWriter() = default;
    ChainManifestWriter(const ChainManifestWriter&) = delete;
    ChainManifestWriter& operator=(const ChainManifestWriter&) = delete;
    ~ChainManifestWriter() { close(); }

    // `ctx` (the ChainSink's copy) outlives the writer.
    void start(const SinkContext& ctx, std::filesystem::path path, ChainMode mode);
    void opened(std::string_view file, std::string_view prev) noexcept;
    void closed(std::string_view file, std::uint64_t records, std::string_view last) noexcept;
    void deleted(std::string_view file, std::uint64_t records, std::string_view last) noexcept;
    void close() noexcept;

    // Events that could not be written.
    std::uint64_t failures() const noexcept { return failures_; }
    const std::filesystem::path& path() const noexcept { return path_; }

private:
    void write(const std::string& line) noexcept;

    const SinkContext* ctx_ = nullptr;
    std::filesystem::path path_;
    ChainMode mode_ = ChainMode::none;
    int fd_ = -1;
    std::uint64_t failures_ = 0;
};

}  // namespace jsonlw::detail
