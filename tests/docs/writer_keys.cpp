// Writes, with the three real writers, records that set every field their schemas have, into
// the directory given as argv[1]: check_writer_keys.py compares the keys of those lines with
// the field tables of docs/writers.md.
#include <jsonlw/perf_metrics_writer.hpp>
#include <jsonlw/raw_output_writer.hpp>
#include <jsonlw/request_trace_writer.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <thread>

namespace {

jsonlw::StepMetrics full_step()
{
    jsonlw::StepMetrics s;
    s.iter = 1;
    s.forward_start_time = 1.0, s.forward_end_time = 1.1, s.sample_start_time = 1.2;
    s.sample_end_time = 1.3, s.gpu_forward_time = 0.5, s.gpu_sample_time = 0.25;
    s.token_time = 1.4, s.scheduled_time = 0.9, s.prev_batch_token_time = 0.8;
    s.iter_counter = 3, s.iter_batch_size = 4, s.num_ctx_requests = 1, s.num_gen_requests = 2;
    s.context_token_number = 5, s.generation_token_number = 6, s.req_context_token_number = 7;
    s.req_generation_token_number = 8, s.num_capacity_fitting = 9, s.num_scheduled = 10;
    return s;
}

jsonlw::PhaseRecord full_phase(const char* id)
{
    jsonlw::PhaseRecord p;
    p.first_iter = 1, p.last_iter = 9;
    p.timing_metrics = {.arrival_time = 10.1, .first_scheduled_time = 10.2,
                        .first_token_time = 10.3, .last_token_time = 10.9,
                        .server_arrival_time = 10.0, .server_first_token_time = 10.35,
                        .kv_cache_size = 4096, .kv_cache_transfer_start = 10.05,
                        .kv_cache_transfer_end = 10.08};
    p.kv_cache_metrics = jsonlw::KvCacheMetrics{1, 2, 3, 4, 0.5};
    p.speculative_decoding = jsonlw::SpeculativeDecoding{0.5, 2, 4};
    p.time_breakdown_metrics = jsonlw::TimeBreakdownMetrics{{full_step()}, {full_step()}, 1.5, 0.5};
    p.request_id = id;
    p.ctx_request_id = "17";
    return p;
}

}  // namespace

int main(int argc, char** argv)
{
    if (argc != 2) return 2;
    const std::filesystem::path dir = argv[1];
    boost::asio::io_context io;
    jsonlw::PerfMetricsWriter perf(io.get_executor(), dir / "perf", "server");
    jsonlw::RawOutputWriter raw(io.get_executor(), {.directory = dir / "raw"});
    jsonlw::RequestTraceWriter trace(io.get_executor(), {.directory = dir / "trace"});
    perf.start(), raw.start(), trace.start();
    std::thread loop([&io] { auto w = boost::asio::make_work_guard(io); io.run(); });
    // Every record carries a trace context (the request line: from its header).
    constexpr const char* traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const auto tc = jsonlw::TraceContext::parse_traceparent(traceparent);

    // Perf metrics: a worker line and a disagg-server line with every field set.
    jsonlw::PerfMetricsRecord worker;
    worker.request_id = "42";
    worker.server = full_phase("42");
    worker.ctx_request_id = "17";
    worker.disagg_request_id = "9001";
    worker.trace_context = tc;
    perf.submit(worker);
    jsonlw::PerfMetricsRecord disagg;
    disagg.request_id = "9001";
    disagg.disagg = jsonlw::DisaggPhase{"http://ctx0:8001", "http://gen0:8002",
                                        {.server_arrival_time = 9.0, .ctx_dispatch_time = 9.1,
                                         .server_first_token_time = 9.5}};
    disagg.ctx = full_phase("ctx-1");
    disagg.gen = full_phase("gen-1");
    disagg.disagg_request_id = "9001";
    disagg.trace_context = tc;
    perf.submit(disagg);

    // Raw output: logprobs with ranks, top-k and a non-finite value, a token without data,
    // first_gen_logits with an overflow, then a partial record.
    const std::int32_t ids[] = {1, 2, 3};
    const jsonlw::TokenLogprob lps[] = {
        {.token_id = 1, .logprob = -0.5, .rank = 1, .top = {{1, -0.5}, {7, -1.5}}},
        {.token_id = 2, .logprob = std::nan(""), .rank = 2}};
    const std::byte row[8]{};
    raw.on_chunk({.request_id = 1, .text_diff = "ab", .token_ids_diff = {ids, 2},
                  .streaming = true, .disagg_request_id = 9001, .logprobs_diff = lps,
                  .first_gen_logits = jsonlw::FirstGenLogitsView{jsonlw::snapshot::LogitDType::f32, 2, row, 1},
                  .trace_context = tc});
    raw.on_chunk({.request_id = 1, .text_diff = "c", .token_ids_diff = {ids + 2, 1},
                  .is_final = true, .text = "abc"});
    raw.on_chunk({.request_id = 2, .text_diff = "x", .token_ids_diff = {ids, 1}});
    raw.on_request_end(2, "error");

    // Request traces: a rejected request with a non-JSON body and validation errors, and a
    // response with every optional field and a non-JSON "json" body.
    trace.record_request({.trace_id = "tr_0", .session = "s", .server_arrival_time = 1.0,
                          .route = "/v1/completions",
                          .status = jsonlw::RequestTraceStatus::rejected_400,
                          .headers = {{"X-Tag", "a"}, {"traceparent", traceparent}},
                          .body = "{not json",
                          .validation_errors = std::vector<jsonlw::TraceValidationError>{
                              {{"body", "model"}, "missing", "Field required"}}});
    trace.record_response({.trace_id = "tr_0", .session = "s",
                           .status = jsonlw::ResponseTraceStatus::error, .client_id = 7,
                           .disagg_request_id = 9001, .ctx_request_id = 17, .http_status = 500,
                           .termination = jsonlw::TraceTermination{"exception", "boom"},
                           .response = {.kind = jsonlw::ResponseKind::json, .body = "{bad"},
                           .response_status = "incomplete",
                           .incomplete_reason = "max_output_tokens",
                           .error_code = "server_error", .trace_context = tc});

    auto a = perf.async_close(boost::asio::use_future);
    auto b = raw.async_close(boost::asio::use_future);
    auto c = trace.async_close(boost::asio::use_future);
    const std::uint64_t written = a.get().stats.written + b.get().stats.written + c.get().stats.written;
    io.stop();
    loop.join();
    std::printf("written %llu\n", (unsigned long long)written);
    return written == 2 + 2 + 2 ? 0 : 1;
}
