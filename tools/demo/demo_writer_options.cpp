// The demo's stage and writer options (see demo_writer_options.hpp).
#include "demo_writer_options.hpp"

namespace jsonlw::tools {

namespace {

// What all three writers take alike from the demo's options.
void common(WriterOptions& w, const DemoOptions& o, std::shared_ptr<FileIo> io,
            std::shared_ptr<LineSink> sink)
{
    w.file_io = std::move(io);
    w.envelope = o.envelope;
    w.format = o.format;
    w.otlp.service_name = demo_service_name;
    w.sink = std::move(sink);
    w.chain = o.chain;
    w.chain_key = o.chain_key;
}

}  // namespace

snapshot::SnapshotConfig demo_stage_config(const DemoOptions& o)
{
    snapshot::SnapshotConfig sc;
    sc.k = o.top_k;
    sc.max_rows = int(o.concurrency);
    sc.max_vocab = int(o.vocab);
    sc.first_gen = snapshot::FirstGenMode::float16_compat;
    sc.max_first_gen_rows_per_step = 8;
    sc.ring_slots = o.ring_slots;
    sc.slot_wait = std::chrono::milliseconds(o.stage_wait_ms);
    sc.cpu_threads = o.stage_threads;
    sc.cpu_worker_nice = o.stage_nice;
    return sc;
}

Retention demo_retention(const DemoOptions& o)
{
    return Retention{.retain_files = std::size_t(o.retain_files),
                     .retain_bytes = o.retain_bytes,
                     .retain_age = std::chrono::milliseconds(o.retain_age_ms)};
}

RawOutputOptions demo_raw_options(const DemoOptions& o, std::shared_ptr<FileIo> io,
                                  std::shared_ptr<LineSink> sink)
{
    RawOutputOptions r;
    r.directory = o.out / "raw_output";
    r.max_pending = o.concurrency * 4 + 64;
    r.capture = o.capture;
    r.queue_capacity = o.writer_queue ? o.writer_queue : 4096;
    common(r, o, std::move(io), std::move(sink));
    return r;
}

RequestTraceOptions demo_trace_options(const DemoOptions& o, std::shared_ptr<FileIo> io,
                                       std::shared_ptr<LineSink> sink)
{
    RequestTraceOptions r;
    r.directory = o.out / "request_trace";
    r.capture = o.capture;
    if (o.writer_queue) r.queue_capacity = o.writer_queue;
    common(r, o, std::move(io), std::move(sink));
    return r;
}

PerfMetricsOptions demo_perf_options(const DemoOptions& o, std::shared_ptr<FileIo> io,
                                     std::shared_ptr<LineSink> sink)
{
    PerfMetricsOptions p;  // its queue is TensorRT-LLM's 1024: --writer-queue leaves it
    common(p, o, std::move(io), std::move(sink));
    return p;
}

}  // namespace jsonlw::tools
