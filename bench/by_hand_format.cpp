// The by-hand formatting of the equal-work baselines: fmt::format_to, literal keys, and the
// escaping and timestamps a user writes for JSON.
#include "by_hand_format.hpp"

#include <fmt/compile.h>

#include <cstring>
#include <ctime>
#include <optional>
#include <string_view>

namespace bench {

namespace {

// A double as TensorRT-LLM's Python writer spells it (json.dumps, i.e. repr): fmt's shortest
// round-trip form, with ".0"
// when that has neither a fraction nor an exponent.
void py_double(fmt::memory_buffer& b, double d)
{
    const std::size_t at = b.size();
    fmt::format_to(fmt::appender(b), FMT_COMPILE("{}"), d);
    const std::string_view v(b.data() + at, b.size() - at);
    if (v.find_first_of(".en") == std::string_view::npos) b.append(std::string_view(".0"));
}

void py_field(fmt::memory_buffer& b, std::string_view key, const std::optional<double>& d,
              bool comma = true)
{
    if (!d) return;
    if (comma) b.push_back(',');
    b.push_back('"');
    b.append(key);
    b.append(std::string_view("\":"));
    py_double(b, *d);
}

void fmt_steps(fmt::memory_buffer& b, std::string_view key,
               const std::vector<jsonlw::StepMetrics>& steps)
{
    b.push_back('"');
    b.append(key);
    b.append(std::string_view("\":["));
    for (std::size_t i = 0; i < steps.size(); ++i) {
        const jsonlw::StepMetrics& m = steps[i];
        b.append(std::string_view(i ? ",{" : "{"));
        bool first = true;
        if (m.iter) {
            fmt::format_to(fmt::appender(b), FMT_COMPILE("\"iter\":{}"), *m.iter);
            first = false;
        }
        py_field(b, "forward_start_time", m.forward_start_time, !first);
        py_field(b, "forward_end_time", m.forward_end_time);
        py_field(b, "sample_start_time", m.sample_start_time);
        py_field(b, "sample_end_time", m.sample_end_time);
        py_field(b, "gpu_forward_time", m.gpu_forward_time);
        py_field(b, "gpu_sample_time", m.gpu_sample_time);
        py_field(b, "token_time", m.token_time);
        b.push_back('}');
    }
    b.push_back(']');
}

}  // namespace

void format_perf_by_hand(const jsonlw::PerfMetricsRecord& r, fmt::memory_buffer& b)
{
    const jsonlw::PhaseRecord& p = *r.server;
    const jsonlw::TimingMetrics& t = p.timing_metrics;
    fmt::format_to(fmt::appender(b), FMT_COMPILE(R"({{"request_id":{},"perf_metrics":{{"timing_metrics":{{)"),
                   r.request_id);
    py_field(b, "arrival_time", t.arrival_time, false);
    py_field(b, "first_scheduled_time", t.first_scheduled_time);
    py_field(b, "first_token_time", t.first_token_time);
    py_field(b, "last_token_time", t.last_token_time);
    py_field(b, "server_arrival_time", t.server_arrival_time);
    py_field(b, "server_first_token_time", t.server_first_token_time);
    b.push_back('}');
    if (p.first_iter) fmt::format_to(fmt::appender(b), FMT_COMPILE(",\"first_iter\":{}"), *p.first_iter);
    if (p.last_iter) fmt::format_to(fmt::appender(b), FMT_COMPILE(",\"last_iter\":{}"), *p.last_iter);
    if (const auto& kv = p.kv_cache_metrics)
        fmt::format_to(fmt::appender(b),
                       FMT_COMPILE(R"(,"kv_cache_metrics":{{"num_total_allocated_blocks":{},)"
                                   R"("num_new_allocated_blocks":{},"num_reused_blocks":{},)"
                                   R"("num_missed_blocks":{}}})"),
                       kv->num_total_allocated_blocks, kv->num_new_allocated_blocks,
                       kv->num_reused_blocks, kv->num_missed_blocks);
    b.push_back('}');
    if (const auto& tb = p.time_breakdown_metrics) {
        b.append(std::string_view(R"(,"time_breakdown_metrics":{)"));
        fmt_steps(b, "ctx_chunk_metrics", tb->ctx_chunk_metrics);
        b.push_back(',');
        fmt_steps(b, "step_metrics", tb->step_metrics);
        b.push_back('}');
    }
    fmt::format_to(fmt::appender(b), FMT_COMPILE(R"(,"status":"{}"}})"), r.status);
}

namespace {

// JSON string escaping as a user writes it (no UTF-8 check: the text here is ASCII).
void escape_to(fmt::memory_buffer& b, std::string_view t)
{
    b.push_back('"');
    std::size_t run = 0;
    for (std::size_t i = 0; i < t.size(); ++i) {
        const unsigned char c = static_cast<unsigned char>(t[i]);
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        b.append(t.substr(run, i - run));
        run = i + 1;
        switch (c) {
        case '"': b.append(std::string_view("\\\"")); break;
        case '\\': b.append(std::string_view("\\\\")); break;
        case '\n': b.append(std::string_view("\\n")); break;
        case '\r': b.append(std::string_view("\\r")); break;
        case '\t': b.append(std::string_view("\\t")); break;
        default: fmt::format_to(fmt::appender(b), FMT_COMPILE("\\u{:04x}"), c);
        }
    }
    b.append(t.substr(run));
    b.push_back('"');
}

void iso8601_to(fmt::memory_buffer& b, std::chrono::system_clock::time_point tp)
{
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(tp.time_since_epoch()).count();
    const std::time_t secs = static_cast<std::time_t>(us / 1000000);
    std::tm tm{};
    ::gmtime_r(&secs, &tm);
    fmt::format_to(fmt::appender(b), FMT_COMPILE("\"{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}+00:00\""),
                   tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                   tm.tm_sec, us % 1000000);
}

}  // namespace

void format_output_by_hand(const RawOutputShape& o, std::uint64_t id, ByHandOutput& acc,
                           fmt::memory_buffer& b)
{
    acc.text.clear();
    acc.frame_ends.clear();
    acc.tokens.clear();
    for (std::size_t j = 0; j < 4; ++j) {
        if (j == 0) acc.started_at = std::chrono::system_clock::now();
        acc.text.append(std::string_view(o.text).substr(o.text_at[j], o.text_at[j + 1] - o.text_at[j]));
        acc.frame_ends.push_back(acc.text.size());
        acc.tokens.insert(acc.tokens.end(), o.tokens.begin() + static_cast<std::ptrdiff_t>(o.token_at[j]),
                          o.tokens.begin() + static_cast<std::ptrdiff_t>(o.token_at[j + 1]));
    }
    acc.finished_at = std::chrono::system_clock::now();
    fmt::format_to(fmt::appender(b),
                   FMT_COMPILE(R"({{"event":"raw_output","request_id":"{}","disagg_request_id":null,)"
                               R"("output_index":0,"started_at":)"),
                   id);
    iso8601_to(b, acc.started_at);
    b.append(std::string_view(R"(,"finished_at":)"));
    iso8601_to(b, acc.finished_at);
    b.append(std::string_view(R"(,"streaming":true,"aborted":false,"text":)"));
    escape_to(b, acc.text);
    b.append(std::string_view(R"(,"frames":[)"));
    std::size_t from = 0;
    for (std::size_t k = 0; k < acc.frame_ends.size(); ++k) {
        if (k) b.push_back(',');
        escape_to(b, std::string_view(acc.text).substr(from, acc.frame_ends[k] - from));
        from = acc.frame_ends[k];
    }
    b.append(std::string_view(R"(],"token_ids":[)"));
    for (std::size_t k = 0; k < acc.tokens.size(); ++k)
        fmt::format_to(fmt::appender(b), FMT_COMPILE("{}{}"), k ? "," : "", acc.tokens[k]);
    fmt::format_to(fmt::appender(b),
                   FMT_COMPILE(R"(],"num_output_tokens":{},"frames_consistent":true}})"),
                   acc.tokens.size());
}

std::string without_stamps(std::string line)
{
    for (const char* key : {"\"started_at\":\"", "\"finished_at\":\""}) {
        const std::size_t at = line.find(key);
        if (at == std::string::npos) continue;
        const std::size_t from = at + std::strlen(key);
        const std::size_t to = line.find('"', from);
        if (to != std::string::npos) line.replace(from, to - from, to - from, '#');
    }
    return line;
}

}  // namespace bench
