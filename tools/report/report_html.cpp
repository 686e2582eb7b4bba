#include <jsonlw/report/report.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>

namespace jsonlw::tools {

namespace {

using Out = std::back_insert_iterator<std::string>;

std::string esc(std::string_view s)
{
    std::string o;
    o.reserve(s.size());
    for (const char c : s) {
        switch (c) {
        case '&': o += "&amp;"; break;
        case '<': o += "&lt;"; break;
        case '>': o += "&gt;"; break;
        case '"': o += "&quot;"; break;
        case '\'': o += "&#39;"; break;
        default: o += c;
        }
    }
    return o;
}

// The 12 time_breakdown.py spans' colours, in order; other spans share the last.
constexpr const char* palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
                                   "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#1f77b4", "#8c564b",
                                   "#666666"};

const char* colour(Span s) noexcept
{
    const auto k = static_cast<std::size_t>(s);
    return palette[std::min<std::size_t>(k, std::size(palette) - 1)];
}

std::string fmt_ms(double v) { return fmt::format("{:.3f}", v); }

// A histogram of sorted values: 40 bins from the minimum to p99, and one more for the rest.
void histogram(Out out, std::string_view title, const std::vector<double>& sorted, const Summary& s)
{
    constexpr int bins = 40, w = 720, h = 240, left = 50, right = 20, top = 16, bottom = 40;
    std::array<std::uint64_t, bins + 1> n{};
    const double lo = s.min, hi = std::max(s.p99, lo);
    const double width = hi > lo ? (hi - lo) / bins : 1.0;
    for (const double v : sorted) {
        if (v > hi) ++n[bins];
        else n[std::min<std::size_t>(bins - 1, static_cast<std::size_t>((v - lo) / width))]++;
    }
    const std::uint64_t peak = std::max<std::uint64_t>(1, *std::max_element(n.begin(), n.end()));
    const double bw = static_cast<double>(w - left - right) / (bins + 1);
    const double plot_h = h - top - bottom;
    fmt::format_to(out, "<figure>\n<figcaption>{}: {} samples, median {} ms, p99 {} ms</figcaption>\n",
                   esc(title), s.count, fmt_ms(s.median), fmt_ms(s.p99));
    fmt::format_to(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
                        "role=\"img\"><title>{} histogram</title>\n",
                   w, h, w, h, esc(title));
    fmt::format_to(out, "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" class=\"axis\"/>\n", left, h - bottom,
                   w - right, h - bottom);
    for (int b = 0; b <= bins; ++b) {
        if (n[b] == 0) continue;
        const double bh = plot_h * static_cast<double>(n[b]) / static_cast<double>(peak);
        fmt::format_to(out, "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" class=\"{}\"><title>{}: {}</title></rect>\n",
                       left + b * bw, top + plot_h - bh, bw - 1, bh, b == bins ? "over" : "bar",
                       b == bins ? fmt::format("above p99 ({} ms)", fmt_ms(hi))
                                 : fmt::format("{} to {} ms", fmt_ms(lo + b * width), fmt_ms(lo + (b + 1) * width)),
                       n[b]);
    }
    fmt::format_to(out, "<text x=\"{}\" y=\"{}\">{} ms</text>\n", left, h - bottom + 16, fmt_ms(lo));
    fmt::format_to(out, "<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"end\">{} ms (p99)</text>\n", left + bins * bw,
                   h - bottom + 16, fmt_ms(hi));
    fmt::format_to(out, "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", left - 4, top + 10, peak);
    fmt::format_to(out, "<text x=\"{}\" y=\"{}\">requests per bin; last bar: above p99</text>\n", left,
                   h - 6);
    fmt::format_to(out, "</svg>\n</figure>\n");
}

void timeline(Out out, const std::vector<std::pair<std::uint64_t, TimelineRow>>& rows, std::string_view source)
{
    constexpr int row_h = 14, left = 150, right = 20, top = 24, w = 1000;
    double end = 0;
    for (const auto& [order, row] : rows)
        for (const auto& seg : row.segments) end = std::max(end, seg.end_ms);
    if (end <= 0) end = 1;
    const int h = top + static_cast<int>(rows.size()) * row_h + 10;
    const double scale = (w - left - right) / end;
    fmt::format_to(out, "<figure>\n<figcaption>Per-request timeline ({} lines): the first {} requests in file "
                        "order, each from its own first stamp; 0 to {} ms</figcaption>\n",
                   esc(source), rows.size(), fmt_ms(end));
    fmt::format_to(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
                        "role=\"img\"><title>per-request timeline</title>\n",
                   w, h, w, h);
    fmt::format_to(out, "<text x=\"{}\" y=\"14\">0 ms</text><text x=\"{}\" y=\"14\" text-anchor=\"end\">{} ms</text>\n",
                   left, w - right, fmt_ms(end));
    int y = top;
    for (const auto& [order, row] : rows) {
        fmt::format_to(out, "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"label\">{}</text>\n", left - 4,
                       y + row_h - 4, esc(row.label));
        for (const auto& seg : row.segments)
            fmt::format_to(out, "<rect x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\"><title>{}: {} ms</title></rect>\n",
                           left + seg.start_ms * scale, y + 1, std::max(0.5, (seg.end_ms - seg.start_ms) * scale),
                           row_h - 2, colour(seg.span), span_info(seg.span).name, fmt_ms(seg.end_ms - seg.start_ms));
        y += row_h;
    }
    // The legend names the spans drawn, in span order, each in its bars' colour: a worker's
    // timeline draws only its role's spans, and a key for the others would name no bar.
    std::array<bool, span_count> drawn{};
    for (const auto& [order, row] : rows)
        for (const auto& seg : row.segments) drawn[static_cast<std::size_t>(seg.span)] = true;
    fmt::format_to(out, "</svg>\n<p class=\"legend\">");
    for (std::size_t k = 0; k < span_count; ++k)
        if (drawn[k])
            fmt::format_to(out, "<span><i style=\"background:{}\"></i>{}</span> ", colour(static_cast<Span>(k)),
                           span_info(static_cast<Span>(k)).name);
    fmt::format_to(out, "</p>\n</figure>\n");
}

void stat_cells(Out out, const Summary& s)
{
    if (s.count == 0) {
        fmt::format_to(out, "<td>0</td><td>-</td><td>-</td><td>-</td><td>-</td>");
        return;
    }
    fmt::format_to(out, "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>", s.count, fmt_ms(s.mean),
                   fmt_ms(s.median), fmt_ms(s.p75), fmt_ms(s.p99));
}

}  // namespace

std::string report_html(const Report& r)
{
    std::string s;
    Out out(s);
    fmt::format_to(out, R"(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<title>jsonlw report: {}</title>
<style>
body {{ font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; margin: 0.5em 0 1.5em; }}
th, td {{ border: 1px solid #ccc; padding: 2px 8px; text-align: right; }}
th:first-child, td:first-child {{ text-align: left; }}
figure {{ margin: 1em 0; }}
figcaption {{ font-weight: bold; margin-bottom: 4px; }}
svg {{ background: #fafafa; border: 1px solid #ddd; font-size: 11px; }}
.bar {{ fill: #4e79a7; }} .over {{ fill: #e15759; }} .axis {{ stroke: #888; }}
.label {{ font-size: 10px; }}
.legend span {{ margin-right: 1em; white-space: nowrap; }}
.legend i {{ display: inline-block; width: 10px; height: 10px; margin-right: 4px; }}
.bad {{ color: #b00; font-weight: bold; }}
</style>
</head>
<body>
<h1>jsonlw report</h1>
<p>{}: {} files, {} bytes, {} lines ({} valid, <span class="{}">{} malformed</span>), {} torn tails. Times in ms; percentiles by linear interpolation.</p>
)",
                   esc(r.dir.string()), esc(r.dir.string()), r.files.size(), r.bytes, r.lines, r.valid,
                   r.malformed ? "bad" : "ok", r.malformed, r.torn_tails);

    fmt::format_to(out, "<h2>Integrity</h2>\n<table>\n<tr><th>file</th><th>kind</th><th>lines</th><th>valid</th>"
                        "<th>malformed</th><th>torn tail (bytes)</th></tr>\n");
    for (const auto& f : r.files)
        fmt::format_to(out, "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                       esc(f.name), esc(f.kind_label()), f.lines, f.valid, f.malformed, f.torn_tail_bytes);
    fmt::format_to(out, "</table>\n");
    bool any_bad = false;
    for (const auto& f : r.files)
        for (const auto& m : f.malformed_lines) {
            if (!any_bad) fmt::format_to(out, "<ul>\n");
            any_bad = true;
            fmt::format_to(out, "<li>{}:{}: {}</li>\n", esc(f.name), m.line, esc(m.error));
        }
    if (any_bad) fmt::format_to(out, "</ul>\n");

    const auto& p = r.perf;
    if (p.records[0] + p.records[1] > 0) {
        fmt::format_to(out, "<h2>Perf metrics</h2>\n");
        for (std::size_t src = 0; src < perf_source_count; ++src) {
            if (p.records[src] == 0) continue;
            const char* name = src == 0 ? "disagg-server" : "worker";
            fmt::format_to(out, "<h3>{} lines ({})</h3>\n<table>\n<tr><th>span</th><th>from</th><th>to</th><th>count</th>"
                                "<th>mean</th><th>median</th><th>p75</th><th>p99</th><th>missing</th><th>inverted</th></tr>\n",
                           name, p.records[src]);
            for (std::size_t k = 0; k < span_count; ++k) {
                const auto sp = static_cast<Span>(k);
                if (!span_shown(r, static_cast<PerfSource>(src), sp)) continue;
                const SpanInfo& info = span_info(sp);
                fmt::format_to(out, "<tr><td>{}</td><td>{}</td><td>{}</td>", info.name, esc(info.from), esc(info.to));
                stat_cells(out, r.perf_summary[src][k]);
                fmt::format_to(out, "<td>{}</td><td>{}</td></tr>\n", p.spans[src][k].missing, p.spans[src][k].inverted);
            }
            fmt::format_to(out, "</table>\n");
            for (const Span sp : {Span::queue, Span::ttft, Span::e2e, Span::tpot}) {
                const auto k = static_cast<std::size_t>(sp);
                if (r.perf_summary[src][k].count == 0) continue;
                histogram(out, fmt::format("{} {} (ms)", name, span_info(sp).name), p.spans[src][k].values,
                          r.perf_summary[src][k]);
            }
        }
        const std::size_t src = p.timeline[0].empty() ? 1 : 0;
        if (!p.timeline[src].empty()) timeline(out, p.timeline[src], src == 0 ? "disagg-server" : "worker");
    }

    const auto& raw = r.raw;
    if (raw.outputs > 0) {
        fmt::format_to(out, "<h2>Raw output</h2>\n<table>\n<tr><th>figure</th><th>value</th></tr>\n");
        const auto row = [&](std::string_view k, auto v) { fmt::format_to(out, "<tr><td>{}</td><td>{}</td></tr>\n", k, v); };
        row("outputs", raw.outputs);
        row("tokens", raw.tokens);
        row("frames_consistent: false", raw.frames_inconsistent);
        row("aborted", raw.aborted);
        row("partial", raw.partial);
        for (const auto& [k, v] : raw.end_reasons) row("partial, end_reason " + esc(k), v);
        if (raw.with_logprobs) {
            row("outputs with logprobs", raw.with_logprobs);
            row("logprob values / nulls", fmt::format("{} / {}", raw.logprob_values, raw.logprob_nulls));
            row("mean logprob per token",
                fmt::format("{:.4f}", raw.logprob_values ? raw.logprob_sum / static_cast<double>(raw.logprob_values) : 0.0));
        }
        if (raw.with_first_gen) row("first_gen_logits items (bad)", fmt::format("{} ({})", raw.first_gen_items, raw.first_gen_bad));
        fmt::format_to(out, "</table>\n<table>\n<tr><th>per output</th><th>count</th><th>mean</th><th>median</th>"
                            "<th>p75</th><th>p99</th></tr>\n<tr><td>frames</td>");
        stat_cells(out, r.frames_per_output);
        fmt::format_to(out, "</tr>\n<tr><td>tokens</td>");
        stat_cells(out, r.tokens_per_output);
        fmt::format_to(out, "</tr>\n</table>\n");
    }

    const auto& t = r.trace;
    if (t.requests + t.responses > 0 || !r.sidecars.empty()) {
        fmt::format_to(out, "<h2>Request traces</h2>\n<table>\n<tr><th>figure</th><th>value</th></tr>\n");
        const auto row = [&](std::string_view k, auto v) { fmt::format_to(out, "<tr><td>{}</td><td>{}</td></tr>\n", k, v); };
        row("requests", t.requests);
        for (const auto& [k, v] : t.request_status) row("requests " + esc(k), v);
        row("responses", t.responses);
        for (const auto& [k, v] : t.response_status) row("responses " + esc(k), v);
        row("requests without a response", t.requests_without_response);
        row("responses without a request", t.responses_without_request);
        row("redacted header values", t.redacted);
        row("credential-like headers not redacted", t.unredacted_credentials);
        for (const auto& c : r.sidecars)
            row("sidecar " + esc(c.name), esc(fmt::format("{}, {} records, {} bad", c.consistent ? "consistent" : "NOT consistent",
                                                      c.records, c.bad)));
        fmt::format_to(out, "</table>\n");
    }
    // Only when the writers were given trace contexts (docs/trace_context.md).
    const auto& j = r.join;
    if (j.lines_with + j.invalid > 0) {
        fmt::format_to(out, "<h2>Trace context</h2>\n<table>\n<tr><th>figure</th><th>value</th></tr>\n");
        const auto row = [&](std::string_view k, auto v) { fmt::format_to(out, "<tr><td>{}</td><td>{}</td></tr>\n", k, v); };
        row("requests by traceparent", j.requests);
        row("joined (a perf-metrics, a raw-output and a request-trace line each)", j.joined);
        row("not joined", j.not_joined());
        row("not joined, without a perf-metrics line", j.missing_perf);
        row("not joined, without a raw-output line", j.missing_raw);
        row("not joined, without a request-trace line", j.missing_trace);
        row("lines without traceparent", j.lines_without);
        row("lines with an invalid traceparent", j.invalid);
        fmt::format_to(out, "</table>\n");
    }
    fmt::format_to(out, "</body>\n</html>\n");
    return s;
}

}  // namespace jsonlw::tools
