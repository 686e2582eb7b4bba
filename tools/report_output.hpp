// The three ways a Report is printed: a text summary (report_text.cpp), the same figures as
// one JSON object (report_json.cpp), and a self-contained HTML page with inline SVG figures
// (report_html.cpp). Pure functions of the Report.
#pragma once

#include "report.hpp"

#include <string>

namespace jsonlw::tools {

std::string report_text(const Report& r);
std::string report_json(const Report& r);
// One page, no network: inline CSS and SVG. One <svg> per <figure>: a latency histogram per
// headline figure with samples, and the per-request timeline of the first 200 requests.
std::string report_html(const Report& r);

// Which spans the outputs show for a source: the applicable ones that saw any line.
bool span_shown(const Report& r, PerfSource src, Span s) noexcept;

}  // namespace jsonlw::tools
