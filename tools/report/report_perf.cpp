#include <jsonlw/report/detail/report_perf.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace jsonlw::tools {

namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

constexpr double nan = std::numeric_limits<double>::quiet_NaN();

constexpr std::array<SpanInfo, span_count> span_table{{
    {"disagg_preprocessing", "disagg_server_arrival_time", "ctx server_arrival_time", true, false},
    {"ctx_preprocessing", "ctx server_arrival_time", "ctx arrival_time", true, true},
    {"ctx_queue", "ctx arrival_time", "ctx first_scheduled_time", true, true},
    {"ctx_processing", "ctx first_scheduled_time", "ctx first_token_time", true, true},
    {"ctx_postprocessing", "ctx first_token_time", "ctx server_first_token_time", true, true},
    {"disagg_relay", "ctx server_first_token_time", "gen server_arrival_time", true, false},
    {"gen_preprocessing", "gen server_arrival_time", "gen arrival_time", true, true},
    {"gen_queue_wait", "gen arrival_time", "gen kv_cache_transfer_start", true, true},
    {"gen_kv_transfer", "gen kv_cache_transfer_start", "gen kv_cache_transfer_end", true, true},
    {"gen_post_transfer", "gen kv_cache_transfer_end", "gen first_scheduled_time", true, true},
    {"gen_postprocessing", "gen first_scheduled_time", "gen server_first_token_time", true, true},
    {"disagg_postprocessing", "gen server_first_token_time", "disagg_server_first_token_time", true,
     false},
    {"queue", "arrival (disagg: disagg_server_arrival_time)",
     "first_scheduled_time (disagg: disagg_ctx_dispatch_time)", true, true},
    {"ttft", "arrival_time (disagg: disagg_server_arrival_time)",
     "first_token_time (disagg: disagg_server_first_token_time)", true, true},
    {"e2e", "arrival_time (disagg: disagg_server_arrival_time)", "last_token_time (disagg: gen's)",
     true, true},
    {"tpot", "(last_token_time - first_token_time)", "/ tokens after the first (gen phase on disagg)",
     true, true},
    {"chunk_forward", "chunk forward_start_time", "forward_end_time", true, true},
    {"chunk_update", "chunk forward_end_time", "sample_start_time", true, true},
    {"chunk_sample", "chunk sample_start_time", "sample_end_time", true, true},
    {"chunk_postprocessing", "chunk sample_end_time", "token_time", true, true},
    {"chunk_gpu_forward", "chunk gpu_forward_time", "(ms as written)", true, true},
    {"chunk_gpu_sample", "chunk gpu_sample_time", "(ms as written)", true, true},
    {"step_forward", "step forward_start_time", "forward_end_time", true, true},
    {"step_update", "step forward_end_time", "sample_start_time", true, true},
    {"step_sample", "step sample_start_time", "sample_end_time", true, true},
    {"step_postprocessing", "step sample_end_time", "token_time", true, true},
    {"step_gpu_forward", "step gpu_forward_time", "(ms as written)", true, true},
    {"step_gpu_sample", "step gpu_sample_time", "(ms as written)", true, true},
}};

// A timestamp in seconds, or NaN when it is not one: absent, null, another type, <= 0 (the
// writers' "unset") or non-finite.
double stamp(object o, std::string_view key) noexcept
{
    element e;
    double d = 0;
    if (o.at_key(key).get(e) != simdjson::SUCCESS || e.get_double().get(d) != simdjson::SUCCESS)
        return nan;
    return std::isfinite(d) && d > 0 ? d : nan;
}

// A duration already in ms (gpu_*_time): 0 is a measurement, a negative value is not.
double duration_ms(object o, std::string_view key) noexcept
{
    element e;
    double d = 0;
    if (o.at_key(key).get(e) != simdjson::SUCCESS || e.get_double().get(d) != simdjson::SUCCESS)
        return nan;
    return std::isfinite(d) && d >= 0 ? d : nan;
}

bool child(object o, std::string_view key, object& out) noexcept
{
    return o.at_key(key).get(out) == simdjson::SUCCESS;
}

bool child(object o, std::string_view key, array& out) noexcept
{
    return o.at_key(key).get(out) == simdjson::SUCCESS;
}

bool integer(object o, std::string_view key, std::int64_t& out) noexcept
{
    return o.at_key(key).get(out) == simdjson::SUCCESS;
}

// The phase's timing_metrics (phase = a worker line, or ctx_/gen_perf_metrics).
bool timing(object phase, object& out) noexcept
{
    object pm;
    return child(phase, "perf_metrics", pm) && child(pm, "timing_metrics", out);
}

std::size_t index(PerfSource s) noexcept { return static_cast<std::size_t>(s); }

}  // namespace

const SpanInfo& span_info(Span s) noexcept { return span_table[static_cast<std::size_t>(s)]; }

void PerfAccumulator::span(PerfSource src, Span s, double start_s, double end_s)
{
    SampleSet& set = spans[index(src)][static_cast<std::size_t>(s)];
    if (std::isnan(start_s) || std::isnan(end_s)) {
        ++set.missing;
    } else if (end_s < start_s) {
        ++set.inverted;
    } else {
        const double ms = (end_s - start_s) * 1000.0;
        if (std::isfinite(ms)) set.values.push_back(ms);
        else ++set.missing;
    }
}

void PerfAccumulator::count_status(object rec)
{
    std::string_view s;
    if (rec.at_key("status").get(s) != simdjson::SUCCESS) {
        ++status_other;
        return;
    }
    if (auto it = status.find(s); it != status.end()) ++it->second;
    else if (status.size() < 32) status.emplace(std::string(s), 1);
    else ++status_other;
}

void PerfAccumulator::steps(PerfSource src, object phase)
{
    object tbm;
    if (!child(phase, "time_breakdown_metrics", tbm)) return;
    const auto one = [&](std::string_view key, Span first) {
        array list;
        if (!child(tbm, key, list)) return;
        const auto at = [first](int k) { return static_cast<Span>(static_cast<int>(first) + k); };
        for (const element e : list) {
            object st;
            if (e.get(st) != simdjson::SUCCESS) {
                for (int k = 0; k < 6; ++k) ++spans[index(src)][static_cast<std::size_t>(at(k))].missing;
                continue;
            }
            const double fs = stamp(st, "forward_start_time"), fe = stamp(st, "forward_end_time");
            const double ss = stamp(st, "sample_start_time"), se = stamp(st, "sample_end_time");
            span(src, at(0), fs, fe);
            span(src, at(1), fe, ss);
            span(src, at(2), ss, se);
            span(src, at(3), se, stamp(st, "token_time"));
            // Already milliseconds: a span from 0.
            const double gf = duration_ms(st, "gpu_forward_time");
            const double gs = duration_ms(st, "gpu_sample_time");
            span(src, at(4), std::isnan(gf) ? nan : 0.0, std::isnan(gf) ? nan : gf / 1000.0);
            span(src, at(5), std::isnan(gs) ? nan : 0.0, std::isnan(gs) ? nan : gs / 1000.0);
        }
    };
    one("ctx_chunk_metrics", Span::chunk_forward);
    one("step_metrics", Span::step_forward);
}

void PerfAccumulator::tpot(PerfSource src, object phase, double first_token, double last_token)
{
    // Tokens after the first: the iteration range (one token per iteration, plus accepted
    // draft tokens; context chunks after the first produce none), else the per-step token
    // counts when every step has one, else one per step. Step lists may be partial, so the
    // iteration range comes first.
    double after_first = nan;
    object pm, tbm;
    array steps_list, chunks;
    const bool has_tbm = child(phase, "time_breakdown_metrics", tbm);
    std::int64_t first = 0, last = 0;
    if (child(phase, "perf_metrics", pm) && integer(pm, "first_iter", first) &&
        integer(pm, "last_iter", last) && last > first) {
        std::int64_t n = last - first;
        if (has_tbm && child(tbm, "ctx_chunk_metrics", chunks) && chunks.size() > 1)
            n -= static_cast<std::int64_t>(chunks.size()) - 1;
        object spec;
        std::int64_t accepted = 0;
        if (child(pm, "speculative_decoding", spec) &&
            integer(spec, "total_accepted_draft_tokens", accepted) && accepted > 0)
            n += accepted;
        if (n > 0) after_first = static_cast<double>(n);
    } else if (has_tbm && child(tbm, "step_metrics", steps_list) && steps_list.size() > 0) {
        std::int64_t sum = 0;
        bool all = true;
        for (const element e : steps_list) {
            object st;
            std::int64_t n = 0;
            if (e.get(st) != simdjson::SUCCESS || !integer(st, "req_generation_token_number", n) ||
                n <= 0) {
                all = false;
                break;
            }
            sum += n;
        }
        after_first = static_cast<double>(all ? sum : static_cast<std::int64_t>(steps_list.size()));
    }
    if (std::isnan(after_first) || std::isnan(first_token) || std::isnan(last_token)) {
        span(src, Span::tpot, nan, nan);
        return;
    }
    // As a span from 0 to (last - first) / n, so inversion and missing ends count the same way.
    if (last_token < first_token) {
        span(src, Span::tpot, 1.0, 0.0);
        return;
    }
    span(src, Span::tpot, 0.0, (last_token - first_token) / after_first);
}

void PerfAccumulator::push_row(PerfSource src, std::uint64_t order, const element* id,
                               TimelineRow&& row)
{
    // A max-heap by order: its front is the latest of the rows kept.
    auto& rows = timeline[index(src)];
    const auto earlier = [](const auto& a, const auto& b) { return a.first < b.first; };
    std::string_view sv;
    std::int64_t i = 0;
    std::uint64_t u = 0;
    if (id && id->get(sv) == simdjson::SUCCESS) row.label.assign(sv.substr(0, 40));
    else if (id && id->get(i) == simdjson::SUCCESS) row.label = fmt::format("{}", i);
    else if (id && id->get(u) == simdjson::SUCCESS) row.label = fmt::format("{}", u);
    else row.label = "?";
    if (rows.size() >= timeline_rows) {
        std::pop_heap(rows.begin(), rows.end(), earlier);
        rows.pop_back();
    }
    rows.emplace_back(order, std::move(row));
    std::push_heap(rows.begin(), rows.end(), earlier);
}

void PerfAccumulator::add_worker(object rec, std::uint64_t order)
{
    constexpr auto src = PerfSource::worker;
    ++records[index(src)];
    count_status(rec);
    object t;
    const bool has_timing = timing(rec, t);
    const auto s = [&](std::string_view k) { return has_timing ? stamp(t, k) : nan; };
    const double server_arrival = s("server_arrival_time"), arrival = s("arrival_time");
    const double first_scheduled = s("first_scheduled_time"), first_token = s("first_token_time");
    const double last_token = s("last_token_time"), server_first_token = s("server_first_token_time");
    const double kv_end = s("kv_cache_transfer_end");

    std::array<double, 6> chain{};
    std::size_t n = 0;
    Span first_span;
    // kv_cache_transfer_end present: a generation worker, as TensorRT-LLM's perf-sanity
    // aggregator (tests/integration/defs/perf/time_breakdown_metrics.py) classifies it.
    if (!std::isnan(kv_end)) {
        ++gen_worker_lines[index(src)];
        chain = {server_arrival, arrival, s("kv_cache_transfer_start"), kv_end, first_scheduled,
                 server_first_token};
        n = 6;
        first_span = Span::gen_preprocessing;
    } else {
        chain = {server_arrival, arrival, first_scheduled, first_token, server_first_token, nan};
        n = 5;
        first_span = Span::ctx_preprocessing;
    }
    for (std::size_t k = 0; k + 1 < n; ++k)
        span(src, static_cast<Span>(static_cast<int>(first_span) + static_cast<int>(k)), chain[k],
             chain[k + 1]);
    span(src, Span::queue, arrival, first_scheduled);
    span(src, Span::ttft, arrival, first_token);
    span(src, Span::e2e, arrival, last_token);
    tpot(src, rec, first_token, last_token);
    steps(src, rec);

    auto& rows = timeline[index(src)];
    if (rows.size() < timeline_rows || order < rows.front().first) {
        TimelineRow row;
        double origin = nan;
        for (std::size_t k = 0; k < n && std::isnan(origin); ++k) origin = chain[k];
        element id;
        const bool has_id = rec.at_key("request_id").get(id) == simdjson::SUCCESS;
        for (std::size_t k = 0; k + 1 < n; ++k) {
            if (std::isnan(chain[k]) || std::isnan(chain[k + 1]) || chain[k + 1] < chain[k]) continue;
            row.segments.push_back({static_cast<Span>(static_cast<int>(first_span) + static_cast<int>(k)),
                                    (chain[k] - origin) * 1000.0, (chain[k + 1] - origin) * 1000.0});
        }
        push_row(src, order, has_id ? &id : nullptr, std::move(row));
    }
}

void PerfAccumulator::add_disagg(object rec, std::uint64_t order)
{
    constexpr auto src = PerfSource::disagg;
    ++records[index(src)];
    count_status(rec);
    object ctx, gen, ct, gt;
    const bool has_ctx = child(rec, "ctx_perf_metrics", ctx);
    const bool has_gen = child(rec, "gen_perf_metrics", gen);
    const bool has_ct = has_ctx && timing(ctx, ct);
    const bool has_gt = has_gen && timing(gen, gt);
    const auto c = [&](std::string_view k) { return has_ct ? stamp(ct, k) : nan; };
    const auto g = [&](std::string_view k) { return has_gt ? stamp(gt, k) : nan; };
    const double arrival = stamp(rec, "disagg_server_arrival_time");
    const double first_token = stamp(rec, "disagg_server_first_token_time");
    // The time_breakdown.py chain: span k runs from chain[k-1] to chain[k].
    const std::array<double, 13> chain{
        arrival, c("server_arrival_time"), c("arrival_time"), c("first_scheduled_time"),
        c("first_token_time"), c("server_first_token_time"), g("server_arrival_time"),
        g("arrival_time"), g("kv_cache_transfer_start"), g("kv_cache_transfer_end"),
        g("first_scheduled_time"), g("server_first_token_time"), first_token};
    for (std::size_t k = 0; k + 1 < chain.size(); ++k)
        span(src, static_cast<Span>(k), chain[k], chain[k + 1]);
    span(src, Span::queue, arrival, stamp(rec, "disagg_ctx_dispatch_time"));
    span(src, Span::ttft, arrival, first_token);
    span(src, Span::e2e, arrival, g("last_token_time"));
    if (has_gen) tpot(src, gen, g("first_token_time"), g("last_token_time"));
    else span(src, Span::tpot, nan, nan);
    if (has_ctx) steps(src, ctx);
    if (has_gen) steps(src, gen);

    auto& rows = timeline[index(src)];
    if (rows.size() < timeline_rows || order < rows.front().first) {
        TimelineRow row;
        double origin = nan;
        for (std::size_t k = 0; k < chain.size() && std::isnan(origin); ++k) origin = chain[k];
        element id;
        const bool has_id = (rec.at_key("disagg_request_id").get(id) == simdjson::SUCCESS && !id.is_null()) ||
                            (has_ctx && ctx.at_key("request_id").get(id) == simdjson::SUCCESS);
        for (std::size_t k = 0; k + 1 < chain.size(); ++k) {
            if (std::isnan(chain[k]) || std::isnan(chain[k + 1]) || chain[k + 1] < chain[k]) continue;
            row.segments.push_back({static_cast<Span>(k), (chain[k] - origin) * 1000.0,
                                    (chain[k + 1] - origin) * 1000.0});
        }
        push_row(src, order, has_id ? &id : nullptr, std::move(row));
    }
}

void PerfAccumulator::merge(PerfAccumulator&& o)
{
    for (std::size_t s = 0; s < perf_source_count; ++s) {
        records[s] += o.records[s];
        gen_worker_lines[s] += o.gen_worker_lines[s];
        for (std::size_t k = 0; k < span_count; ++k) spans[s][k].merge(std::move(o.spans[s][k]));
        for (auto& r : o.timeline[s]) timeline[s].push_back(std::move(r));
    }
    for (auto& [k, v] : o.status) {
        if (auto it = status.find(k); it != status.end()) it->second += v;
        else if (status.size() < 32) status.emplace(k, v);
        else status_other += v;
    }
    status_other += o.status_other;
}

void PerfAccumulator::finish()
{
    for (auto& rows : timeline) {
        std::sort(rows.begin(), rows.end(),
                  [](const auto& a, const auto& b) { return a.first < b.first; });
        if (rows.size() > timeline_rows) rows.resize(timeline_rows);
    }
}

}  // namespace jsonlw::tools
