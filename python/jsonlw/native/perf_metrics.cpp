// jsonlw._native.PerfMetricsWriter: TensorRT-LLM's internal perf-metrics record (a dict,
// reference §2.1) read into a PerfMetricsRecord on the caller's thread (GIL held), then queued
// to the C++ PerfMetricsWriter, which applies the §2.3 rules when it serializes (I/O thread,
// no GIL). A dict that cannot be read is queued as a record marked malformed: the writer drops
// and counts it (dropped.malformed) and logs "Dropped malformed performance metrics record:
// <why>", exactly where a record that fails the §2.3 rules is.
#include "writer_box.hpp"

#include <jsonlw/perf_metrics_writer.hpp>

#include <fmt/format.h>

namespace jsonlw::python {
namespace {

using Box = WriterBox<PerfMetricsWriter>;

std::optional<double> stamp(PyObject* d, const char* key, const std::string& where)
{
    PyObject* v = item(d, key, where);
    if (!v || v == Py_None) return std::nullopt;
    return to_number(v, where + "." + key);
}

std::optional<std::int64_t> opt_int(PyObject* d, const char* key, const std::string& where)
{
    PyObject* v = item(d, key, where);
    if (!v || v == Py_None) return std::nullopt;
    return to_int(v, where + "." + key);
}

PyObject* sub_dict(PyObject* d, const char* key, const std::string& where, bool required)
{
    PyObject* v = required ? require(d, key, where) : item(d, key, where);
    if (!v || (!required && v == Py_None)) return nullptr;
    const std::string at = where + "." + key;
    if (!is_dict(v)) throw BadRecord(fmt::format("{} must be a dict, got {}", at, Py_TYPE(v)->tp_name));
    check_str_keys(v, at);
    return v;
}

TimingMetrics timing(PyObject* t, const std::string& w)
{
    TimingMetrics m;
    m.arrival_time = stamp(t, "arrival_time", w);
    m.first_scheduled_time = stamp(t, "first_scheduled_time", w);
    m.first_token_time = stamp(t, "first_token_time", w);
    m.last_token_time = stamp(t, "last_token_time", w);
    m.server_arrival_time = stamp(t, "server_arrival_time", w);
    m.server_first_token_time = stamp(t, "server_first_token_time", w);
    m.kv_cache_size = opt_int(t, "kv_cache_size", w);
    m.kv_cache_transfer_start = stamp(t, "kv_cache_transfer_start", w);
    m.kv_cache_transfer_end = stamp(t, "kv_cache_transfer_end", w);
    return m;
}

StepMetrics step(PyObject* s, const std::string& w)
{
    StepMetrics m;
    m.iter = opt_int(s, "iter", w);
    m.forward_start_time = stamp(s, "forward_start_time", w);
    m.forward_end_time = stamp(s, "forward_end_time", w);
    m.sample_start_time = stamp(s, "sample_start_time", w);
    m.sample_end_time = stamp(s, "sample_end_time", w);
    m.gpu_forward_time = stamp(s, "gpu_forward_time", w);
    m.gpu_sample_time = stamp(s, "gpu_sample_time", w);
    m.token_time = stamp(s, "token_time", w);
    m.scheduled_time = stamp(s, "scheduled_time", w);
    m.prev_batch_token_time = stamp(s, "prev_batch_token_time", w);
    m.iter_counter = opt_int(s, "iter_counter", w);
    m.iter_batch_size = opt_int(s, "iter_batch_size", w);
    m.num_ctx_requests = opt_int(s, "num_ctx_requests", w);
    m.num_gen_requests = opt_int(s, "num_gen_requests", w);
    m.context_token_number = opt_int(s, "context_token_number", w);
    m.generation_token_number = opt_int(s, "generation_token_number", w);
    m.req_context_token_number = opt_int(s, "req_context_token_number", w);
    m.req_generation_token_number = opt_int(s, "req_generation_token_number", w);
    m.num_capacity_fitting = opt_int(s, "num_capacity_fitting", w);
    m.num_scheduled = opt_int(s, "num_scheduled", w);
    return m;
}

// Longest step or chunk list read (a decode of 1M tokens is far past any real request).
constexpr Py_ssize_t max_steps = 1 << 20;

std::vector<StepMetrics> steps(PyObject* tb, const char* key, const std::string& w)
{
    std::vector<StepMetrics> out;
    PyObject* v = item(tb, key, w);
    if (!v || v == Py_None) return out;
    const std::string at = w + "." + key;
    if (!PyList_Check(v) && !PyTuple_Check(v))
        throw BadRecord(fmt::format("{} must be a list, got {}", at, Py_TYPE(v)->tp_name));
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
    if (n > max_steps) throw BadRecord(fmt::format("{} has more than {} entries", at, max_steps));
    out.reserve(std::size_t(n));
    PyObject** items = PySequence_Fast_ITEMS(v);
    for (Py_ssize_t i = 0; i < n; ++i) {
        const std::string ai = fmt::format("{}[{}]", at, i);
        if (!is_dict(items[i]))
            throw BadRecord(fmt::format("{} must be a dict, got {}", ai, Py_TYPE(items[i])->tp_name));
        check_str_keys(items[i], ai);
        out.push_back(step(items[i], ai));
    }
    return out;
}

PhaseRecord phase(PyObject* p, const std::string& w)
{
    PhaseRecord r;
    r.first_iter = opt_int(p, "first_iter", w);
    r.last_iter = opt_int(p, "last_iter", w);
    r.timing_metrics = timing(sub_dict(p, "timing_metrics", w, true), w + ".timing_metrics");
    if (PyObject* kv = sub_dict(p, "kv_cache_metrics", w, false)) {
        const std::string at = w + ".kv_cache_metrics";
        KvCacheMetrics k;
        k.num_total_allocated_blocks = opt_int(kv, "num_total_allocated_blocks", at).value_or(0);
        k.num_new_allocated_blocks = opt_int(kv, "num_new_allocated_blocks", at).value_or(0);
        k.num_reused_blocks = opt_int(kv, "num_reused_blocks", at).value_or(0);
        k.num_missed_blocks = opt_int(kv, "num_missed_blocks", at).value_or(0);
        k.kv_cache_hit_rate = stamp(kv, "kv_cache_hit_rate", at);
        r.kv_cache_metrics = k;
    }
    if (PyObject* sd = sub_dict(p, "speculative_decoding", w, false)) {
        const std::string at = w + ".speculative_decoding";
        SpeculativeDecoding s;
        s.acceptance_rate = stamp(sd, "acceptance_rate", at).value_or(0);
        s.total_accepted_draft_tokens = opt_int(sd, "total_accepted_draft_tokens", at).value_or(0);
        s.total_draft_tokens = opt_int(sd, "total_draft_tokens", at).value_or(0);
        r.speculative_decoding = s;
    }
    if (PyObject* tb = sub_dict(p, "time_breakdown_metrics", w, false)) {
        const std::string at = w + ".time_breakdown_metrics";
        TimeBreakdownMetrics t;
        t.step_metrics = steps(tb, "step_metrics", at);
        t.ctx_chunk_metrics = steps(tb, "ctx_chunk_metrics", at);
        t.ctx_gpu_forward_time = stamp(tb, "ctx_gpu_forward_time", at);
        t.ctx_gpu_sample_time = stamp(tb, "ctx_gpu_sample_time", at);
        r.time_breakdown_metrics = std::move(t);
    }
    if (PyObject* v = item(p, "request_id", w); v && v != Py_None)
        r.request_id = to_id(v, w + ".request_id");
    if (PyObject* v = item(p, "ctx_request_id", w); v && v != Py_None)
        r.ctx_request_id = to_id(v, w + ".ctx_request_id");
    return r;
}

// Reads the dict; throws BadRecord with the text the writer logs.
PerfMetricsRecord read_record(PyObject* o)
{
    if (!is_dict(o))
        throw BadRecord(fmt::format("record must be a dict, got {}", Py_TYPE(o)->tp_name));
    check_str_keys(o, "record");
    PerfMetricsRecord rec;
    if (PyObject* v = item(o, "request_id", "record"); v && v != Py_None)
        rec.request_id = to_id(v, "request_id");
    if (PyObject* v = item(o, "status", "record"); v && v != Py_None)
        rec.status = to_string(v, "status", 256);
    if (PyObject* v = item(o, "ctx_request_id", "record"); v && v != Py_None)
        rec.ctx_request_id = to_id(v, "ctx_request_id");
    if (PyObject* v = item(o, "disagg_request_id", "record"); v && v != Py_None)
        rec.disagg_request_id = to_id(v, "disagg_request_id");
    PyObject* phases = sub_dict(o, "phases", "record", true);
    if (PyObject* d = sub_dict(phases, "disagg", "phases", false)) {
        DisaggPhase dp;
        dp.ctx_server = to_string(require(d, "ctx_server", "phases.disagg"),
                                  "phases.disagg.ctx_server", 4096);
        dp.gen_server = to_string(require(d, "gen_server", "phases.disagg"),
                                  "phases.disagg.gen_server", 4096);
        PyObject* t = sub_dict(d, "timing_metrics", "phases.disagg", true);
        const std::string w = "phases.disagg.timing_metrics";
        dp.timing_metrics.arrival_time = stamp(t, "arrival_time", w);
        dp.timing_metrics.last_token_time = stamp(t, "last_token_time", w);
        dp.timing_metrics.server_arrival_time = stamp(t, "server_arrival_time", w);
        dp.timing_metrics.ctx_dispatch_time = stamp(t, "ctx_dispatch_time", w);
        dp.timing_metrics.server_first_token_time = stamp(t, "server_first_token_time", w);
        rec.disagg = std::move(dp);
        rec.ctx = phase(sub_dict(phases, "ctx", "phases", true), "phases.ctx");
        rec.gen = phase(sub_dict(phases, "gen", "phases", true), "phases.gen");
    } else if (PyObject* s = sub_dict(phases, "server", "phases", false)) {
        rec.server = phase(s, "phases.server");
    }
    // No server phase (and no disagg): serialize_perf_metrics() drops it as "'server'".
    return rec;
}

}  // namespace

// GIL held. Never raises for a bad record.
PerfMetricsRecord perf_metrics_record(PyObject* o)
{
    try {
        return read_record(o);
    } catch (const BadRecord& e) {
        PerfMetricsRecord bad;
        bad.malformed = e.what();
        return bad;
    } catch (const std::exception& e) {  // out of memory, say
        if (PyErr_Occurred()) PyErr_Clear();
        PerfMetricsRecord bad;
        bad.malformed = e.what();
        return bad;
    }
}

void register_perf_metrics(py::module_& m)
{
    py::class_<Box, std::shared_ptr<Box>> cls(m, "PerfMetricsWriter",
        "jsonlw::PerfMetricsWriter (the C++ writer), fed with TensorRT-LLM's internal records.");
    cls.def(py::init([](std::shared_ptr<IoContext> io, std::string directory, std::string kind,
                        py::object logger, std::string durability) {
                auto logs = std::make_shared<LogQueue>();
                auto box = std::make_shared<Box>(io, logs, logger);
                PerfMetricsOptions extra;
                extra.log = logs->sink();
                if (durability == "none") extra.durability = Durability::none;
                else if (durability == "fsync_batch")
                    extra.durability = Durability::fsync_batch;
                else if (durability == "fsync_interval")
                    extra.durability = Durability::fsync_interval;
                else
                    throw py::value_error("durability must be 'none', 'fsync_batch' or "
                                          "'fsync_interval', got '" + durability + "'");
                try {
                    box->set(std::make_shared<PerfMetricsWriter>(io->executor(), directory, kind,
                                                                 std::move(extra)));
                } catch (const std::invalid_argument& e) {
                    throw py::value_error(e.what());
                }
                return box;
            }),
            py::arg("io"), py::arg("directory"), py::arg("kind"), py::arg("logger"),
            py::arg("durability") = "none");
    cls.def("submit", [](Box& b, py::handle record) {
        SubmitResult r = b.writer().submit(perf_metrics_record(record.ptr()));
        b.emit_logs();
        return r;
    });
    bind_writer_common<Box>(cls);
    cls.def_property_readonly("kind", [](const Box& b) { return b.writer().kind(); });

    // The line the writer would write for `record` (tests, tools); raises ValueError for a
    // record it would drop as malformed.
    m.def("perf_metrics_line", [](py::handle record) {
        PerfMetricsRecord rec = perf_metrics_record(record.ptr());
        LineBuffer buf;
        JsonLine line(buf);
        try {
            serialize_perf_metrics(rec, line);
        } catch (const MalformedRecord& e) {
            throw py::value_error(e.what());
        }
        return py::bytes(buf.data(), buf.size());
    });
}

}  // namespace jsonlw::python
