// LogCapture: collects a writer's log lines (level, text) for assertions. The sink it hands out
// shares the storage, so it stays valid however long the writer keeps calling it.
#pragma once

#include <jsonlw/log.hpp>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jsonlw_test {

struct LogEntry {
    jsonlw::LogLevel level;
    std::string text;
};

class LogCapture {
public:
    // The sink to put in WriterOptions::log.
    jsonlw::LogSink sink() const
    {
        return [s = state_](jsonlw::LogLevel level, std::string_view text) {
            std::lock_guard lock(s->mutex);
            s->entries.push_back({level, std::string(text)});
        };
    }

    std::vector<LogEntry> entries() const
    {
        std::lock_guard lock(state_->mutex);
        return state_->entries;
    }

    // Texts of the entries at `level` that contain `needle`.
    std::vector<std::string> matching(jsonlw::LogLevel level, std::string_view needle = {}) const
    {
        std::vector<std::string> out;
        for (const auto& e : entries())
            if (e.level == level && e.text.find(needle) != std::string::npos) out.push_back(e.text);
        return out;
    }
    std::size_t count(jsonlw::LogLevel level, std::string_view needle = {}) const
    {
        return matching(level, needle).size();
    }
    // Entries at any level that contain `needle`.
    std::size_t count_any(std::string_view needle) const
    {
        std::size_t n = 0;
        for (const auto& e : entries()) n += e.text.find(needle) != std::string::npos;
        return n;
    }
    std::size_t size() const
    {
        std::lock_guard lock(state_->mutex);
        return state_->entries.size();
    }
    // Everything captured, one "level: text" per line (for failure messages).
    std::string dump() const
    {
        std::string out;
        for (const auto& e : entries()) {
            out += std::string(jsonlw::to_string(e.level));
            out += ": ";
            out += e.text;
            out += '\n';
        }
        return out;
    }

private:
    struct State {
        std::mutex mutex;
        std::vector<LogEntry> entries;
    };
    std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace jsonlw_test
