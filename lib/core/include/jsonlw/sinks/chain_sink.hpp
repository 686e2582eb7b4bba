// ChainSink: a sink decorator that ends every line with the writer's hash chain key
// ("chain":"<64 hex>", LineChain; docs/chain.md) before the inner sink writes it, and records
// the files the inner sink opens, closes and deletes in the manifest <directory>/<stem>.chain,
// so that `jsonlw verify` can check one chain per writer across rotation, hour folders,
// retention and restarts.
#pragma once

#include <jsonlw/line_chain.hpp>
#include <jsonlw/sinks/sink_decorator.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

namespace jsonlw {

namespace detail {
class ChainManifestWriter;
}

// Called by the writer's engine as every LineSink is (start() on the start() thread, the rest
// on its I/O thread; files() from any thread); owns its LineChain and the manifest's
// descriptor, shares the inner sink. One running value per key (the key "" of a FileSink
// carries across its rotations; a PartitionedFileSink's key is its file); a key not seen
// before starts from the writer's most recent value, so an hour folder's first file goes on
// from where the writer was. A value advances only over the records the inner sink reports
// written (a prefix of the group): a line that failed is sealed again, from the same value,
// when it is retried — or never appears. A line that is not one JSON object is counted
// failed (logged once per run) and the rest of its group is written.
class ChainSink final : public SinkDecorator {
public:
    // Throws std::invalid_argument for ChainMode::none, hmac_sha256 without a key, or a key
    // in another mode.
    ChainSink(std::shared_ptr<LineSink> inner, ChainMode mode, std::optional<ChainKey> key = {});
    ~ChainSink() override;
    ChainSink(const ChainSink&) = delete;
    ChainSink& operator=(const ChainSink&) = delete;

    // Reads the manifest (a directory is needed for it; without one there is no manifest)
    // and goes on from the last value it records, then starts the inner sink with a context
    // whose on_file_event reaches this sink first, then the one given.
    std::error_code start(const SinkContext& ctx) override;
    AppendResult append(std::string_view key, const Lines& lines) noexcept override;
    void close(bool durable) noexcept override;

    // The writer's most recent chain value (64 '0's before any line): I/O thread.
    const std::string& last() const noexcept { return latest_; }
    // Lines refused because they were not one JSON object; manifest events not written.
    std::uint64_t bad_lines() const noexcept { return bad_lines_; }
    std::uint64_t manifest_failures() const noexcept;

private:
    void on_file_event(const FileEvent& e) noexcept;
    // Lines of `lines` that were not sealed (not one JSON object).
    static std::size_t bad_in_group(const Lines& lines, std::size_t sealed_lines) noexcept;
    AppendResult append_whole(std::string_view key, const Lines& lines,
                              std::size_t sealed_lines) noexcept;

    ChainMode mode_ = ChainMode::none;
    LineChain chain_;
    SinkContext ctx_;
    std::unique_ptr<detail::ChainManifestWriter> manifest_;
    std::string latest_ = std::string(64, '0');
    std::unordered_map<std::string, std::string> values_;  // key -> its running value
    std::unordered_map<std::string, std::string> closed_;  // file -> last value at its close
    std::unordered_map<std::string, std::string> open_;    // file opened, not closed -> its prev
    // The group being appended (for an open event during the inner append).
    bool in_append_ = false;
    std::string group_start_;
    std::string sealed_;   // the group's sealed bytes
    std::string values_of_group_;  // 64 characters per sealed line
    std::uint64_t bad_lines_ = 0;
    // The inner sink's callback holds a weak reference: an inner sink that outlives this
    // one (shared) tells it nothing after.
    std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace jsonlw
