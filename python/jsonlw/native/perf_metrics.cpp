// jsonlw._native.PerfMetricsWriter: TensorRT-LLM's internal perf-metrics record (a dict,
// reference §2.1) read into a PerfMetricsRecord on the caller's thread (GIL held), then queued
// to the C++ PerfMetricsWriter, which applies the §2.3 rules when it serializes (I/O thread,
// no GIL). A dict that cannot be read is queued as a record marked malformed: the writer drops
// and counts it (dropped.malformed) and logs "Dropped malformed performance metrics record:
// <why>", exactly where a record that fails the §2.3 rules is.
#include "writer_box.hpp"

#include <jsonlw/perf_metrics_writer.hpp>

#include <fmt/format.h>

#include <new>
#include <unordered_map>

namespace jsonlw::python {
namespace {

using Box = WriterBox<PerfMetricsWriter>;

// Where a value sits in the record, spelled only when a message needs it (no allocation on
// the good path: this runs on the caller's loop for every record).
struct At {
    const At* parent = nullptr;
    const char* key = nullptr;
    Py_ssize_t index = -1;
    std::string str() const
    {
        std::string out = parent ? parent->str() : std::string();
        if (key) {
            if (!out.empty()) out += '.';
            out += key;
        }
        if (index >= 0) out += fmt::format("[{}]", index);
        return out;
    }
};

// The record's keys as interned str objects, made once: a lookup hashes nothing.
PyObject* interned(const char* key)
{
    static std::unordered_map<const char*, PyObject*> table;  // GIL held: no race
    auto it = table.find(key);
    if (it != table.end()) return it->second;
    PyObject* k = PyUnicode_InternFromString(key);
    if (!k) throw std::bad_alloc();
    table.emplace(key, k);  // kept for the process's lifetime
    return k;
}

// A key: its spelling and its interned str, made once per call site (JSONLW_KEY).
struct Key {
    const char* name;
    PyObject* str;
};
#define JSONLW_KEY(s) ([]() -> const Key& { static const Key k{s, interned(s)}; return k; }())

PyObject* get(PyObject* d, const Key& key)
{
    PyObject* v = PyDict_GetItemWithError(d, key.str);
    if (!v && PyErr_Occurred()) {
        PyErr_Clear();
        throw BadRecord(fmt::format("looking up '{}' raised", key.name));
    }
    return v;
}

// Every key a str (Python's json would refuse the others, and they would be silently lost).
void str_keys(PyObject* d, const At& at)
{
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(d, &pos, &k, &v))
        if (!PyUnicode_CheckExact(k) && !PyUnicode_Check(k))
            throw BadRecord(fmt::format("non-string key in {}", at.str().empty() ? "record" : at.str()));
}

std::optional<double> stamp(PyObject* d, const Key& k, const At& at)
{
    const char* key = k.name;
    PyObject* v = get(d, k);
    if (!v || v == Py_None) return std::nullopt;
    if (PyFloat_CheckExact(v)) return PyFloat_AS_DOUBLE(v);
    return to_number(v, At{&at, key}.str());
}

std::optional<std::int64_t> opt_int(PyObject* d, const Key& k, const At& at)
{
    const char* key = k.name;
    PyObject* v = get(d, k);
    if (!v || v == Py_None) return std::nullopt;
    if (PyLong_CheckExact(v)) {
        int overflow = 0;
        const long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (!overflow && !(x == -1 && PyErr_Occurred())) return x;
        PyErr_Clear();
    }
    return to_int(v, At{&at, key}.str());
}

PyObject* sub_dict(PyObject* d, const Key& k, const At& at, bool required)
{
    const char* key = k.name;
    PyObject* v = get(d, k);
    if (!v) {
        if (required) throw BadRecord(key_error(key));
        return nullptr;
    }
    if (!required && v == Py_None) return nullptr;
    if (!PyDict_Check(v))
        throw BadRecord(fmt::format("{} must be a dict, got {}", At{&at, key}.str(), Py_TYPE(v)->tp_name));
    str_keys(v, At{&at, key});
    return v;
}

TimingMetrics timing(PyObject* t, const At& w)
{
    TimingMetrics m;
    m.arrival_time = stamp(t, JSONLW_KEY("arrival_time"), w);
    m.first_scheduled_time = stamp(t, JSONLW_KEY("first_scheduled_time"), w);
    m.first_token_time = stamp(t, JSONLW_KEY("first_token_time"), w);
    m.last_token_time = stamp(t, JSONLW_KEY("last_token_time"), w);
    m.server_arrival_time = stamp(t, JSONLW_KEY("server_arrival_time"), w);
    m.server_first_token_time = stamp(t, JSONLW_KEY("server_first_token_time"), w);
    m.kv_cache_size = opt_int(t, JSONLW_KEY("kv_cache_size"), w);
    m.kv_cache_transfer_start = stamp(t, JSONLW_KEY("kv_cache_transfer_start"), w);
    m.kv_cache_transfer_end = stamp(t, JSONLW_KEY("kv_cache_transfer_end"), w);
    return m;
}

// Steps hold few of their optional keys: walk the dict's own items instead of probing for
// every key the schema knows. Keys written as literals in Python are interned, so a pointer
// comparison with the interned names finds them; other str keys are compared by value.
enum class StepField : std::uint8_t {
    iter, forward_start_time, forward_end_time, sample_start_time, sample_end_time,
    gpu_forward_time, gpu_sample_time, token_time, scheduled_time, prev_batch_token_time,
    iter_counter, iter_batch_size, num_ctx_requests, num_gen_requests, context_token_number,
    generation_token_number, req_context_token_number, req_generation_token_number,
    num_capacity_fitting, num_scheduled, count
};
constexpr const char* step_field_names[] = {
    "iter", "forward_start_time", "forward_end_time", "sample_start_time", "sample_end_time",
    "gpu_forward_time", "gpu_sample_time", "token_time", "scheduled_time",
    "prev_batch_token_time", "iter_counter", "iter_batch_size", "num_ctx_requests",
    "num_gen_requests", "context_token_number", "generation_token_number",
    "req_context_token_number", "req_generation_token_number", "num_capacity_fitting",
    "num_scheduled"};
constexpr int step_field_count = int(StepField::count);

PyObject* const* step_field_keys()
{
    static PyObject* keys[step_field_count] = {};
    if (!keys[0])
        for (int i = 0; i < step_field_count; ++i) keys[i] = interned(step_field_names[i]);
    return keys;
}

int step_field_of(PyObject* k)
{
    PyObject* const* keys = step_field_keys();
    for (int i = 0; i < step_field_count; ++i)
        if (keys[i] == k) return i;
    for (int i = 0; i < step_field_count; ++i) {  // a str equal to one, but not interned
        const int eq = PyUnicode_Compare(k, keys[i]);
        if (eq == 0) return i;
        if (eq == -1 && PyErr_Occurred()) PyErr_Clear();
    }
    return -1;  // not in the schema: not written
}

void step_field(StepMetrics& m, PyObject* k, PyObject* v, const At& w)
{
    if (v == Py_None) return;
    const int f = step_field_of(k);
    if (f < 0) return;
    const char* key = step_field_names[f];
    auto num = [&](std::optional<double>& out) {
        out = PyFloat_CheckExact(v) ? PyFloat_AS_DOUBLE(v) : to_number(v, At{&w, key}.str());
    };
    auto integer = [&](std::optional<std::int64_t>& out) {
        if (PyLong_CheckExact(v)) {
            int overflow = 0;
            const long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
            if (!overflow && !(x == -1 && PyErr_Occurred())) {
                out = x;
                return;
            }
            PyErr_Clear();
        }
        out = to_int(v, At{&w, key}.str());
    };
    switch (StepField(f)) {
    case StepField::iter: integer(m.iter); break;
    case StepField::forward_start_time: num(m.forward_start_time); break;
    case StepField::forward_end_time: num(m.forward_end_time); break;
    case StepField::sample_start_time: num(m.sample_start_time); break;
    case StepField::sample_end_time: num(m.sample_end_time); break;
    case StepField::gpu_forward_time: num(m.gpu_forward_time); break;
    case StepField::gpu_sample_time: num(m.gpu_sample_time); break;
    case StepField::token_time: num(m.token_time); break;
    case StepField::scheduled_time: num(m.scheduled_time); break;
    case StepField::prev_batch_token_time: num(m.prev_batch_token_time); break;
    case StepField::iter_counter: integer(m.iter_counter); break;
    case StepField::iter_batch_size: integer(m.iter_batch_size); break;
    case StepField::num_ctx_requests: integer(m.num_ctx_requests); break;
    case StepField::num_gen_requests: integer(m.num_gen_requests); break;
    case StepField::context_token_number: integer(m.context_token_number); break;
    case StepField::generation_token_number: integer(m.generation_token_number); break;
    case StepField::req_context_token_number: integer(m.req_context_token_number); break;
    case StepField::req_generation_token_number: integer(m.req_generation_token_number); break;
    case StepField::num_capacity_fitting: integer(m.num_capacity_fitting); break;
    case StepField::num_scheduled: integer(m.num_scheduled); break;
    case StepField::count: break;
    }
}

// Longest step or chunk list read (a decode of 1M tokens is far past any real request).
constexpr Py_ssize_t max_steps = 1 << 20;

std::vector<StepMetrics> steps(PyObject* tb, const Key& k, const At& w)
{
    const char* key = k.name;
    std::vector<StepMetrics> out;
    PyObject* v = get(tb, k);
    if (!v || v == Py_None) return out;
    const At at{&w, key};
    if (!PyList_Check(v) && !PyTuple_Check(v))
        throw BadRecord(fmt::format("{} must be a list, got {}", at.str(), Py_TYPE(v)->tp_name));
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
    if (n > max_steps) throw BadRecord(fmt::format("{} has more than {} entries", at.str(), max_steps));
    out.resize(std::size_t(n));
    PyObject** items = PySequence_Fast_ITEMS(v);
    for (Py_ssize_t i = 0; i < n; ++i) {
        const At ai{&at, nullptr, i};
        PyObject* s = items[i];
        if (!PyDict_Check(s))
            throw BadRecord(fmt::format("{} must be a dict, got {}", ai.str(), Py_TYPE(s)->tp_name));
        PyObject *k, *val;
        Py_ssize_t pos = 0;
        while (PyDict_Next(s, &pos, &k, &val)) {
            if (!PyUnicode_Check(k)) throw BadRecord(fmt::format("non-string key in {}", ai.str()));
            step_field(out[std::size_t(i)], k, val, ai);
        }
    }
    return out;
}

PhaseRecord phase(PyObject* p, const At& w)
{
    PhaseRecord r;
    r.first_iter = opt_int(p, JSONLW_KEY("first_iter"), w);
    r.last_iter = opt_int(p, JSONLW_KEY("last_iter"), w);
    r.timing_metrics = timing(sub_dict(p, JSONLW_KEY("timing_metrics"), w, true), At{&w, "timing_metrics"});
    if (PyObject* kv = sub_dict(p, JSONLW_KEY("kv_cache_metrics"), w, false)) {
        const At at{&w, "kv_cache_metrics"};
        // The counts the dict holds, and only those: {} (or only kv_cache_hit_rate) is
        // written as "kv_cache_metrics":{}, as TensorRT-LLM does. None counts as absent.
        KvCacheMetrics k;
        k.counts = KvCacheCounts::none;
        const auto count = [&](const Key& key, KvCacheCounts bit, std::int64_t& out) {
            if (const auto v = opt_int(kv, key, at)) {
                out = *v;
                k.counts |= bit;
            }
        };
        count(JSONLW_KEY("num_total_allocated_blocks"), KvCacheCounts::num_total_allocated_blocks,
              k.num_total_allocated_blocks);
        count(JSONLW_KEY("num_new_allocated_blocks"), KvCacheCounts::num_new_allocated_blocks,
              k.num_new_allocated_blocks);
        count(JSONLW_KEY("num_reused_blocks"), KvCacheCounts::num_reused_blocks, k.num_reused_blocks);
        count(JSONLW_KEY("num_missed_blocks"), KvCacheCounts::num_missed_blocks, k.num_missed_blocks);
        k.kv_cache_hit_rate = stamp(kv, JSONLW_KEY("kv_cache_hit_rate"), at);
        r.kv_cache_metrics = k;
    }
    if (PyObject* sd = sub_dict(p, JSONLW_KEY("speculative_decoding"), w, false)) {
        const At at{&w, "speculative_decoding"};
        SpeculativeDecoding s;
        s.acceptance_rate = stamp(sd, JSONLW_KEY("acceptance_rate"), at).value_or(0);
        s.total_accepted_draft_tokens = opt_int(sd, JSONLW_KEY("total_accepted_draft_tokens"), at).value_or(0);
        s.total_draft_tokens = opt_int(sd, JSONLW_KEY("total_draft_tokens"), at).value_or(0);
        r.speculative_decoding = s;
    }
    if (PyObject* tb = sub_dict(p, JSONLW_KEY("time_breakdown_metrics"), w, false)) {
        const At at{&w, "time_breakdown_metrics"};
        TimeBreakdownMetrics t;
        t.step_metrics = steps(tb, JSONLW_KEY("step_metrics"), at);
        t.ctx_chunk_metrics = steps(tb, JSONLW_KEY("ctx_chunk_metrics"), at);
        t.ctx_gpu_forward_time = stamp(tb, JSONLW_KEY("ctx_gpu_forward_time"), at);
        t.ctx_gpu_sample_time = stamp(tb, JSONLW_KEY("ctx_gpu_sample_time"), at);
        r.time_breakdown_metrics = std::move(t);
    }
    if (PyObject* v = get(p, JSONLW_KEY("request_id")); v && v != Py_None)
        r.request_id = to_id(v, At{&w, "request_id"}.str());
    if (PyObject* v = get(p, JSONLW_KEY("ctx_request_id")); v && v != Py_None)
        r.ctx_request_id = to_id(v, At{&w, "ctx_request_id"}.str());
    return r;
}

// Reads the dict; throws BadRecord with the text the writer logs.
PerfMetricsRecord read_record(PyObject* o)
{
    if (!PyDict_Check(o))
        throw BadRecord(fmt::format("record must be a dict, got {}", Py_TYPE(o)->tp_name));
    const At top{};
    str_keys(o, top);
    PerfMetricsRecord rec;
    if (PyObject* v = get(o, JSONLW_KEY("request_id")); v && v != Py_None) rec.request_id = to_id(v, "request_id");
    if (PyObject* v = get(o, JSONLW_KEY("status")); v && v != Py_None) rec.status = to_string(v, "status", 256);
    if (PyObject* v = get(o, JSONLW_KEY("ctx_request_id")); v && v != Py_None)
        rec.ctx_request_id = to_id(v, "ctx_request_id");
    if (PyObject* v = get(o, JSONLW_KEY("disagg_request_id")); v && v != Py_None)
        rec.disagg_request_id = to_id(v, "disagg_request_id");
    PyObject* phases = sub_dict(o, JSONLW_KEY("phases"), top, true);
    const At ph{nullptr, "phases"};
    if (PyObject* d = sub_dict(phases, JSONLW_KEY("disagg"), ph, false)) {
        const At at{&ph, "disagg"};
        DisaggPhase dp;
        PyObject* cs = get(d, JSONLW_KEY("ctx_server"));
        if (!cs) throw BadRecord(key_error("ctx_server"));
        PyObject* gs = get(d, JSONLW_KEY("gen_server"));
        if (!gs) throw BadRecord(key_error("gen_server"));
        dp.ctx_server = to_string(cs, "phases.disagg.ctx_server", 4096);
        dp.gen_server = to_string(gs, "phases.disagg.gen_server", 4096);
        PyObject* t = sub_dict(d, JSONLW_KEY("timing_metrics"), at, true);
        const At w{&at, "timing_metrics"};
        dp.timing_metrics.arrival_time = stamp(t, JSONLW_KEY("arrival_time"), w);
        dp.timing_metrics.last_token_time = stamp(t, JSONLW_KEY("last_token_time"), w);
        dp.timing_metrics.server_arrival_time = stamp(t, JSONLW_KEY("server_arrival_time"), w);
        dp.timing_metrics.ctx_dispatch_time = stamp(t, JSONLW_KEY("ctx_dispatch_time"), w);
        dp.timing_metrics.server_first_token_time = stamp(t, JSONLW_KEY("server_first_token_time"), w);
        rec.disagg = std::move(dp);
        rec.ctx = phase(sub_dict(phases, JSONLW_KEY("ctx"), ph, true), At{&ph, "ctx"});
        rec.gen = phase(sub_dict(phases, JSONLW_KEY("gen"), ph, true), At{&ph, "gen"});
    } else if (PyObject* s = sub_dict(phases, JSONLW_KEY("server"), ph, false)) {
        rec.server = phase(s, At{&ph, "server"});
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
        // Inert or closed: refused (and counted, when closed) without reading the record.
        SubmitResult r = b.writer().enabled() ? b.writer().submit(perf_metrics_record(record.ptr()))
                                              : b.writer().submit(PerfMetricsRecord{});
        b.emit_logs();
        return submit_result(r);
    });
    // submit() as a plain CPython builtin bound to this writer (METH_O: no pybind11 argument
    // dispatch on the loop's per-record path). The Python class puts it on the instance.
    cls.def("fast_submit", [](std::shared_ptr<Box> b) {
        static PyMethodDef def{"submit", reinterpret_cast<PyCFunction>(+[](PyObject* self, PyObject* record) -> PyObject* {
            auto* box = static_cast<std::shared_ptr<Box>*>(PyCapsule_GetPointer(self, "jsonlw.perf_metrics"));
            if (!box) return nullptr;
            Box& bx = **box;
            try {
                const SubmitResult r = bx.writer().enabled()
                                           ? bx.writer().submit(perf_metrics_record(record))
                                           : bx.writer().submit(PerfMetricsRecord{});
                bx.emit_logs();
                return submit_result(r).release().ptr();
            } catch (const std::exception& e) {  // out of memory: the caller sees MemoryError
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_MemoryError, e.what());
                return nullptr;
            }
        }), METH_O, "Queue one record; returns a jsonlw.SubmitResult. Never blocks."};
        PyObject* cap = PyCapsule_New(new std::shared_ptr<Box>(std::move(b)), "jsonlw.perf_metrics",
                                      [](PyObject* c) {
                                          delete static_cast<std::shared_ptr<Box>*>(
                                              PyCapsule_GetPointer(c, "jsonlw.perf_metrics"));
                                      });
        if (!cap) throw py::error_already_set();
        PyObject* fn = PyCFunction_New(&def, cap);
        Py_DECREF(cap);
        if (!fn) throw py::error_already_set();
        return py::reinterpret_steal<py::object>(fn);
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
