// MemorySink: lines kept in memory, by key — for tests of encoders and layouts, and for a
// program that wants the lines itself. Faults can be armed to test a writer's accounting.
#pragma once

#include <jsonlw/sinks/line_sink.hpp>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace jsonlw {

// Called by the writer's engine as every LineSink is; the readers (lines(), text(), ...) and
// fail_next() from any thread (a mutex guards the state).
class MemorySink final : public LineSink {
public:
    struct Line {
        std::string key;   // the key append() was given
        std::string text;  // without its '\n'
    };

    AppendResult append(std::string_view key, const Lines& lines) noexcept override;
    std::error_code sync() noexcept override;
    std::error_code reopen() noexcept override;
    void close(bool durable) noexcept override;

    // The next `appends` appends fail with `ec`: the first `landed` lines of each land, the
    // next one is counted unknown when `torn`, the rest failed (a group of Lines::log_records
    // is one line: all of its records land, or none — unknown when `torn`). For faults in
    // front of any sink, FaultySink.
    void fail_next(std::error_code ec, std::size_t appends = 1, std::uint64_t landed = 0,
                   bool torn = false);

    std::vector<Line> lines() const;
    // Every line, each followed by '\n', in append order (any key).
    std::string text() const;
    std::size_t appends() const;
    std::size_t syncs() const;
    std::size_t reopens() const;
    bool closed() const;

private:
    mutable std::mutex mu_;
    std::vector<Line> lines_;
    std::size_t appends_ = 0, syncs_ = 0, reopens_ = 0;
    bool closed_ = false;
    std::error_code fail_ec_;
    std::size_t fail_left_ = 0;
    std::uint64_t fail_landed_ = 0;
    bool fail_torn_ = false;
};

}  // namespace jsonlw
