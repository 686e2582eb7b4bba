// The three writers of `jsonlw serve` (serve_writers.hpp).
#include "serve_writers.hpp"

#include "../demo/demo_writer_options.hpp"

#include <algorithm>

namespace jsonlw::serve {
namespace {

// A server's writers batch over time: a record waits up to `flush` for its batch to fill, and
// an emptied queue is looked at every 5 ms, so the loop wakes each drain a few dozen times a
// second instead of a thousand and hands each I/O thread one batch per period, not one per
// record (docs/serving.md, "What the writers cost the server").
template <class Options>
Options paced(Options w, std::chrono::milliseconds flush)
{
    w.flush_interval = flush;
    w.idle_poll = std::min<std::chrono::microseconds>(flush, std::chrono::milliseconds(5));
    return w;
}

}  // namespace

ServeWriters::ServeWriters(const boost::asio::any_io_executor& ex, const tools::DemoOptions& o,
                           std::chrono::milliseconds flush)
    : raw_sink_(std::make_shared<PartitionedFileSink>(
          PartitionedFileSinkOptions{.retention = tools::demo_retention(o)})),
      trace_sink_(std::make_shared<PartitionedFileSink>(
          PartitionedFileSinkOptions{.retention = tools::demo_retention(o)})),
      perf_sink_(std::make_shared<FileSink>(FileSinkOptions{.rotation = {
          .rotate_bytes = o.rotate_bytes,
          .rotate_interval = std::chrono::milliseconds(o.rotate_interval_ms),
          .retention = tools::demo_retention(o)}})),
      raw_(ex, paced(tools::demo_raw_options(o, nullptr, raw_sink_), flush)),
      trace_(ex, paced(tools::demo_trace_options(o, nullptr, trace_sink_), flush)),
      perf_(ex, o.out / "perf_metrics", "server",
            paced(tools::demo_perf_options(o, nullptr, perf_sink_), flush))
{
}

void ServeWriters::start()
{
    raw_.start();
    trace_.start();
    perf_.start();
}

void ServeWriters::async_close(std::function<void(WritersOutcome)> done)
{
    struct State {
        WritersOutcome outcome;
        int open = 3;
        std::function<void(WritersOutcome)> done;
    };
    auto state = std::make_shared<State>();
    state->done = std::move(done);
    const auto closed = [this, state](int i) {
        return [this, state, i](error_code, CloseReport r) {
            state->outcome.reports[std::size_t(i)] = std::move(r);
            if (--state->open != 0) return;
            state->outcome.sinks = {raw_sink_->counters(), trace_sink_->counters(),
                                    perf_sink_->counters()};
            state->outcome.raw = raw_.counters();
            state->outcome.trace_invalid_traceparents = trace_.invalid_traceparents();
            state->done(std::move(state->outcome));
        };
    };
    raw_.async_close(closed(0));
    trace_.async_close(closed(1));
    perf_.async_close(closed(2));
}

}  // namespace jsonlw::serve
