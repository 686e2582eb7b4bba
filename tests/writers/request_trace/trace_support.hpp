// Shared by the request-trace tests: fixed UTC time points, records, a running writer, and
// reading lines back with simdjson (one DOM parser per parsed line).
#pragma once

#include "common.hpp"

#include <jsonlw/request_trace_verify.hpp>
#include <jsonlw/request_trace_writer.hpp>

#include <catch2/catch.hpp>
#include <simdjson.h>

#include <unistd.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jsonlw_test {

// A UTC wall-clock time point.
inline jsonlw::WallClock::time_point utc(int y, unsigned mo, unsigned d, int h, int mi, int s,
                                         int us = 0)
{
    using namespace std::chrono;
    const sys_days date = year{y} / month{mo} / day{d};
    return time_point_cast<jsonlw::WallClock::duration>(date + hours{h} + minutes{mi} +
                                                        seconds{s} + microseconds{us});
}

inline std::string pid_suffix() { return "-" + std::to_string(::getpid()); }

inline jsonlw::RequestTrace request(std::string trace_id, jsonlw::WallClock::time_point at,
                                    std::string body = R"({"model":"m"})")
{
    jsonlw::RequestTrace r;
    r.trace_id = std::move(trace_id);
    r.session = "s1";
    r.recorded_at = at;
    r.route = "/v1/completions";
    r.body = std::move(body);
    return r;
}

inline jsonlw::ResponseTrace response(std::string trace_id, jsonlw::WallClock::time_point at,
                                      std::string body = R"({"id":"cmpl-1"})")
{
    jsonlw::ResponseTrace r;
    r.trace_id = std::move(trace_id);
    r.session = "s1";
    r.finished_at = at;
    r.response = {jsonlw::ResponseKind::json, std::move(body)};
    return r;
}

// One parsed line; the parser lives as long as the element that points into it.
class Json {
public:
    explicit Json(std::string_view text) : parser_(std::make_unique<simdjson::dom::parser>())
    {
        const auto err = parser_->parse(text.data(), text.size(), true).get(root_);
        INFO("line: " << text);
        REQUIRE(err == simdjson::SUCCESS);
    }
    simdjson::dom::element operator[](std::string_view key) const
    {
        simdjson::dom::element e;
        INFO("key: " << key);
        REQUIRE(root_[key].get(e) == simdjson::SUCCESS);
        return e;
    }
    bool has(std::string_view key) const
    {
        simdjson::dom::element e;
        return root_[key].get(e) == simdjson::SUCCESS;
    }
    simdjson::dom::element root() const { return root_; }
    // The object's keys, in the order they appear.
    std::vector<std::string> keys() const { return keys_of(root_); }

    static std::vector<std::string> keys_of(simdjson::dom::element e)
    {
        std::vector<std::string> out;
        simdjson::dom::object obj;
        REQUIRE(e.get_object().get(obj) == simdjson::SUCCESS);
        for (auto [k, v] : obj) out.emplace_back(k);
        return out;
    }

private:
    std::unique_ptr<simdjson::dom::parser> parser_;
    simdjson::dom::element root_;
};

inline std::string str(simdjson::dom::element e)
{
    std::string_view v;
    REQUIRE(e.get_string().get(v) == simdjson::SUCCESS);
    return std::string(v);
}
inline std::string str(simdjson::dom::element e, std::string_view key)
{
    simdjson::dom::element v;
    INFO("key: " << key);
    REQUIRE(e[key].get(v) == simdjson::SUCCESS);
    return str(v);
}
inline std::int64_t i64(simdjson::dom::element e)
{
    std::int64_t v = 0;
    REQUIRE(e.get_int64().get(v) == simdjson::SUCCESS);
    return v;
}
inline std::uint64_t u64(simdjson::dom::element e, std::string_view key)
{
    std::uint64_t v = 0;
    INFO("key: " << key);
    REQUIRE(e[key].get_uint64().get(v) == simdjson::SUCCESS);
    return v;
}
inline double dbl(simdjson::dom::element e)
{
    double v = 0;
    REQUIRE(e.get_double().get(v) == simdjson::SUCCESS);
    return v;
}
inline bool boolean(simdjson::dom::element e)
{
    bool v = false;
    REQUIRE(e.get_bool().get(v) == simdjson::SUCCESS);
    return v;
}
inline std::string minified(simdjson::dom::element e) { return simdjson::minify(e); }

// RequestTraceOptions writing to `directory`: the harness's logs, through its seam when there
// is one.
inline jsonlw::RequestTraceOptions trace_options(const Harness& h, std::filesystem::path directory)
{
    jsonlw::RequestTraceOptions o;
    o.directory = std::move(directory);
    o.log = h.logs.sink();
    if (h.seam) o.file_io = h.seam;
    return o;
}

// A RequestTraceWriter under root() on a harness with a seam (the writer is destroyed first,
// after the seam has let any held call go); `wire_seam` false leaves the seam out of it.
struct TraceRig : Harness {
    std::unique_ptr<jsonlw::RequestTraceWriter> writer;

    explicit TraceRig(bool durable = false, bool wire_seam = true) : Harness(with_seam)
    {
        jsonlw::RequestTraceOptions o = trace_options(*this, root());
        o.durable = durable;
        if (!wire_seam) o.file_io.reset();
        writer = std::make_unique<jsonlw::RequestTraceWriter>(executor(), std::move(o));
    }
    ~TraceRig()
    {
        seam->release();
        writer.reset();
    }
    std::filesystem::path root() const { return dir.path() / "traces"; }
    jsonlw::RequestTraceWriter& w() { return *writer; }
};

}  // namespace jsonlw_test
