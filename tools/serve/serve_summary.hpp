// What `jsonlw serve` (and `jsonlw demo`, for its server) prints when it stops: the HTTP side's
// counters, then per writer the records it should have received against written + dropped +
// unknown (tools/demo/demo_accounting.hpp), what is on disk, and the snapshot stage. Called
// once, after the ServeApp returned, on the thread that ran it.
#pragma once

#include "serve_app.hpp"

#include <cstdio>

namespace jsonlw::serve {

// Prints the summary; returns the exit status: 0 every record written and on disk; 3 every
// record accounted for, some dropped or unknown with a counted reason; 1 records unaccounted
// for (by the writers' counters or on disk). With --writers off: the HTTP side only, 0.
int print_serve_summary(std::FILE* out, const ServeOptions& o, const ServeOutcome& r);

}  // namespace jsonlw::serve
