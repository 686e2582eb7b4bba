// jsonlw._native.PerfMetricsWriter: TensorRT-LLM's internal perf-metrics record (a dict, as
// PerfMetricsMiddleware in tensorrt_llm/serve/perf_metrics.py builds it) read into a
// PerfMetricsRecord on the caller's thread (GIL held), then queued to the C++
// PerfMetricsWriter, which applies the _jsonl_record rules when it serializes (I/O thread, no
// GIL). A dict that cannot be read is queued as a record marked malformed: the writer drops
// and counts it (dropped.malformed) and logs "Dropped malformed performance metrics record:
// <why>", exactly where a record that fails the _jsonl_record rules is.
#include "dict_shape.hpp"
#include "operator_options.hpp"
#include "writer_box.hpp"

#include <jsonlw/perf_metrics_writer.hpp>

#include <fmt/format.h>

#include <initializer_list>
#include <iterator>

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

// The dicts of the record, one shape each (dict_shape.hpp: one walk per dict, no lookups).
#define JSONLW_SHAPE(...)                                                                    \
    ([]() -> const auto& {                                                                   \
        static const DictShape<std::size(std::initializer_list<const char*>{__VA_ARGS__})> s( \
            {__VA_ARGS__});                                                                  \
        return s;                                                                            \
    }())

// The field a str subclass key names (compared by value), or -1.
template <std::size_t N>
int field_by_value(const DictShape<N>& shape, PyObject* k)
{
    for (int i = 0; i < int(N); ++i) {
        const int eq = PyUnicode_Compare(k, shape.key(i));
        if (eq == 0) return i;
        if (eq == -1 && PyErr_Occurred()) PyErr_Clear();
    }
    return -1;
}

// A dict's items filed by field (new references, null when absent), and the order its keys
// came in (TensorRT-LLM's writer copies the dict, so the line keeps that order). Every key
// must be a str: Python's json would refuse the others, and they would be silently lost.
template <std::size_t N>
class Fields {
public:
    Fields(PyObject* d, const DictShape<N>& shape, const At& at)
    {
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        bool subclass_key = false;
        while (PyDict_Next(d, &pos, &k, &v)) {
            if (PyUnicode_CheckExact(k)) {
                if (const int i = shape.find(k); i >= 0) {
                    Py_INCREF(v);
                    v_[std::size_t(i)] = v;
                    if (n_ < N) order_[n_++] = std::uint8_t(i);
                }
            } else if (PyUnicode_Check(k)) {
                subclass_key = true;
                if (const int i = field_by_value(shape, k); i >= 0 && n_ < N)
                    order_[n_++] = std::uint8_t(i);
            } else {
                clear();
                throw BadRecord(fmt::format("non-string key in {}", at.str().empty() ? "record" : at.str()));
            }
        }
        if (subclass_key) lookup_each(d, shape);
    }
    ~Fields() { clear(); }
    Fields(const Fields&) = delete;
    Fields& operator=(const Fields&) = delete;

    PyObject* operator[](int field) const noexcept { return v_[std::size_t(field)]; }

    // The fields in the dict's order, as the keys of `Key` (a shape listing Key's names
    // first, in Key's order; fields past them are not keys of the map and are skipped).
    template <class Key>
    KeyOrder<Key> order() const noexcept
    {
        KeyOrder<Key> o;
        for (std::size_t i = 0; i < n_; ++i) o.push_back(Key(order_[i]));
        return o;
    }

private:
    // A str subclass among the keys: the dict's own lookup decides, as it always did.
    void lookup_each(PyObject* d, const DictShape<N>& shape)
    {
        for (std::size_t i = 0; i < N; ++i) {
            Py_CLEAR(v_[i]);
            PyObject* v = PyDict_GetItemWithError(d, shape.key(int(i)));
            if (!v && PyErr_Occurred()) {
                PyErr_Clear();
                clear();
                throw BadRecord(fmt::format("looking up '{}' raised", shape.name(int(i))));
            }
            Py_XINCREF(v);
            v_[i] = v;
        }
    }
    void clear() noexcept
    {
        for (PyObject*& p : v_) Py_CLEAR(p);
    }
    std::array<PyObject*, N> v_{};
    std::array<std::uint8_t, N> order_{};
    std::size_t n_ = 0;
};

std::optional<double> stamp(PyObject* v, const At& at, const char* key)
{
    if (!v || v == Py_None) return std::nullopt;
    if (PyFloat_CheckExact(v)) return PyFloat_AS_DOUBLE(v);
    return to_number(v, At{&at, key}.str());
}

std::optional<std::int64_t> opt_int(PyObject* v, const At& at, const char* key)
{
    if (!v || v == Py_None) return std::nullopt;
    if (PyLong_CheckExact(v)) {
        int overflow = 0;
        const long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (!overflow && !(x == -1 && PyErr_Occurred())) return x;
        PyErr_Clear();
    }
    return to_int(v, At{&at, key}.str());
}

// A nested dict: null when absent (a KeyError when required) or, when optional, None.
PyObject* sub_dict(PyObject* v, const At& at, const char* key, bool required)
{
    if (!v) {
        if (required) throw BadRecord(key_error(key));
        return nullptr;
    }
    if (!required && v == Py_None) return nullptr;
    if (!PyDict_Check(v))
        throw BadRecord(fmt::format("{} must be a dict, got {}", At{&at, key}.str(), Py_TYPE(v)->tp_name));
    return v;
}

// The names as the shapes list them (the order of the enums below, and of TimingKey).
#define JSONLW_TIMING_SHAPE                                                                  \
    JSONLW_SHAPE("arrival_time", "first_scheduled_time", "first_token_time",                 \
                 "last_token_time", "server_arrival_time", "server_first_token_time",        \
                 "kv_cache_size", "kv_cache_transfer_start", "kv_cache_transfer_end")
enum TimingField : int {
    t_arrival_time, t_first_scheduled_time, t_first_token_time, t_last_token_time,
    t_server_arrival_time, t_server_first_token_time, t_kv_cache_size,
    t_kv_cache_transfer_start, t_kv_cache_transfer_end
};

TimingMetrics timing(PyObject* d, const At& w)
{
    const auto& shape = JSONLW_TIMING_SHAPE;
    const Fields f(d, shape, w);
    const auto s = [&](int i) { return stamp(f[i], w, shape.name(i)); };
    TimingMetrics m;
    m.arrival_time = s(t_arrival_time);
    m.first_scheduled_time = s(t_first_scheduled_time);
    m.first_token_time = s(t_first_token_time);
    m.last_token_time = s(t_last_token_time);
    m.server_arrival_time = s(t_server_arrival_time);
    m.server_first_token_time = s(t_server_first_token_time);
    m.kv_cache_size = opt_int(f[t_kv_cache_size], w, "kv_cache_size");
    m.kv_cache_transfer_start = s(t_kv_cache_transfer_start);
    m.kv_cache_transfer_end = s(t_kv_cache_transfer_end);
    m.order = f.order<TimingKey>();
    return m;
}

// Steps hold few of their optional keys: walk the dict's own items. Field order: StepKey's;
// the line keeps the dict's order.

const DictShape<std::size_t(StepKey::count)>& step_shape()
{
    return JSONLW_SHAPE(
        "iter", "forward_start_time", "forward_end_time", "sample_start_time", "sample_end_time",
        "gpu_forward_time", "gpu_sample_time", "token_time", "scheduled_time",
        "prev_batch_token_time", "iter_counter", "iter_batch_size", "num_ctx_requests",
        "num_gen_requests", "context_token_number", "generation_token_number",
        "req_context_token_number", "req_generation_token_number", "num_capacity_fitting",
        "num_scheduled");
}

// The field a step key names, or -1 (not in the schema: not written).
int step_field_of(const DictShape<std::size_t(StepKey::count)>& shape, PyObject* k)
{
    if (PyUnicode_CheckExact(k)) [[likely]]
        return shape.find(k);
    for (int i = 0; i < int(StepKey::count); ++i) {  // a str subclass: compared by value
        const int eq = PyUnicode_Compare(k, shape.key(i));
        if (eq == 0) return i;
        if (eq == -1 && PyErr_Occurred()) PyErr_Clear();
    }
    return -1;
}

void step_field(const DictShape<std::size_t(StepKey::count)>& shape, StepMetrics& m,
                PyObject* k, PyObject* v, const At& w)
{
    if (v == Py_None) return;
    const int f = step_field_of(shape, k);
    if (f < 0) return;
    m.order.push_back(StepKey(f));
    const char* key = shape.name(f);
    auto num = [&](std::optional<double>& out) {
        out = PyFloat_CheckExact(v) ? PyFloat_AS_DOUBLE(v) : to_number(v, At{&w, key}.str());
    };
    auto integer = [&](std::optional<std::int64_t>& out) { out = opt_int(v, w, key); };
    switch (StepKey(f)) {
    case StepKey::iter: integer(m.iter); break;
    case StepKey::forward_start_time: num(m.forward_start_time); break;
    case StepKey::forward_end_time: num(m.forward_end_time); break;
    case StepKey::sample_start_time: num(m.sample_start_time); break;
    case StepKey::sample_end_time: num(m.sample_end_time); break;
    case StepKey::gpu_forward_time: num(m.gpu_forward_time); break;
    case StepKey::gpu_sample_time: num(m.gpu_sample_time); break;
    case StepKey::token_time: num(m.token_time); break;
    case StepKey::scheduled_time: num(m.scheduled_time); break;
    case StepKey::prev_batch_token_time: num(m.prev_batch_token_time); break;
    case StepKey::iter_counter: integer(m.iter_counter); break;
    case StepKey::iter_batch_size: integer(m.iter_batch_size); break;
    case StepKey::num_ctx_requests: integer(m.num_ctx_requests); break;
    case StepKey::num_gen_requests: integer(m.num_gen_requests); break;
    case StepKey::context_token_number: integer(m.context_token_number); break;
    case StepKey::generation_token_number: integer(m.generation_token_number); break;
    case StepKey::req_context_token_number: integer(m.req_context_token_number); break;
    case StepKey::req_generation_token_number: integer(m.req_generation_token_number); break;
    case StepKey::num_capacity_fitting: integer(m.num_capacity_fitting); break;
    case StepKey::num_scheduled: integer(m.num_scheduled); break;
    case StepKey::count: break;
    }
}

// Longest step or chunk list read (a decode of 1M tokens is far past any real request).
constexpr Py_ssize_t max_steps = 1 << 20;

std::vector<StepMetrics> steps(PyObject* v, const At& w, const char* key)
{
    std::vector<StepMetrics> out;
    if (!v || v == Py_None) return out;
    const At at{&w, key};
    if (!PyList_Check(v) && !PyTuple_Check(v))
        throw BadRecord(fmt::format("{} must be a list, got {}", at.str(), Py_TYPE(v)->tp_name));
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
    if (n > max_steps) throw BadRecord(fmt::format("{} has more than {} entries", at.str(), max_steps));
    out.resize(std::size_t(n));
    const auto& shape = step_shape();
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
            step_field(shape, out[std::size_t(i)], k, val, ai);
        }
    }
    return out;
}

enum PhaseField : int {
    p_first_iter, p_last_iter, p_timing_metrics, p_kv_cache_metrics, p_speculative_decoding,
    p_time_breakdown_metrics, p_request_id, p_ctx_request_id
};

PhaseRecord phase(PyObject* d, const At& w)
{
    const Fields f(d, JSONLW_SHAPE("first_iter", "last_iter", "timing_metrics", "kv_cache_metrics",
                                   "speculative_decoding", "time_breakdown_metrics",
                                   "request_id", "ctx_request_id"),
                   w);
    PhaseRecord r;
    r.first_iter = opt_int(f[p_first_iter], w, "first_iter");
    r.last_iter = opt_int(f[p_last_iter], w, "last_iter");
    r.timing_metrics = timing(sub_dict(f[p_timing_metrics], w, "timing_metrics", true),
                              At{&w, "timing_metrics"});
    if (PyObject* kv = sub_dict(f[p_kv_cache_metrics], w, "kv_cache_metrics", false)) {
        // The counts the dict holds, and only those: {} (or only kv_cache_hit_rate) is
        // written as "kv_cache_metrics":{}, as TensorRT-LLM does. None counts as absent.
        const At at{&w, "kv_cache_metrics"};
        const auto& shape = JSONLW_SHAPE("num_total_allocated_blocks", "num_new_allocated_blocks",
                                         "num_reused_blocks", "num_missed_blocks",
                                         "kv_cache_hit_rate");
        const Fields kf(kv, shape, at);
        KvCacheMetrics k;
        k.counts = KvCacheCounts::none;
        const auto count = [&](int i, KvCacheCounts bit, std::int64_t& out) {
            if (const auto v = opt_int(kf[i], at, shape.name(i))) {
                out = *v;
                k.counts |= bit;
            }
        };
        count(0, KvCacheCounts::num_total_allocated_blocks, k.num_total_allocated_blocks);
        count(1, KvCacheCounts::num_new_allocated_blocks, k.num_new_allocated_blocks);
        count(2, KvCacheCounts::num_reused_blocks, k.num_reused_blocks);
        count(3, KvCacheCounts::num_missed_blocks, k.num_missed_blocks);
        k.kv_cache_hit_rate = stamp(kf[4], at, "kv_cache_hit_rate");
        k.order = kf.order<KvCacheKey>();
        r.kv_cache_metrics = k;
    }
    if (PyObject* sd = sub_dict(f[p_speculative_decoding], w, "speculative_decoding", false)) {
        const At at{&w, "speculative_decoding"};
        const Fields sf(sd, JSONLW_SHAPE("acceptance_rate", "total_accepted_draft_tokens",
                                         "total_draft_tokens"),
                        at);
        SpeculativeDecoding s;
        s.acceptance_rate = stamp(sf[0], at, "acceptance_rate").value_or(0);
        s.total_accepted_draft_tokens = opt_int(sf[1], at, "total_accepted_draft_tokens").value_or(0);
        s.total_draft_tokens = opt_int(sf[2], at, "total_draft_tokens").value_or(0);
        s.order = sf.order<SpeculativeKey>();
        r.speculative_decoding = s;
    }
    if (PyObject* tb = sub_dict(f[p_time_breakdown_metrics], w, "time_breakdown_metrics", false)) {
        const At at{&w, "time_breakdown_metrics"};
        const Fields tf(tb, JSONLW_SHAPE("ctx_chunk_metrics", "step_metrics", "ctx_gpu_forward_time",
                                         "ctx_gpu_sample_time"),
                        at);
        TimeBreakdownMetrics t;
        t.ctx_chunk_metrics = steps(tf[0], at, "ctx_chunk_metrics");
        t.step_metrics = steps(tf[1], at, "step_metrics");
        t.ctx_gpu_forward_time = stamp(tf[2], at, "ctx_gpu_forward_time");
        t.ctx_gpu_sample_time = stamp(tf[3], at, "ctx_gpu_sample_time");
        t.order = tf.order<TimeBreakdownKey>();
        r.time_breakdown_metrics = std::move(t);
    }
    if (PyObject* v = f[p_request_id]; v && v != Py_None)
        r.request_id = to_id(v, At{&w, "request_id"}.str());
    if (PyObject* v = f[p_ctx_request_id]; v && v != Py_None)
        r.ctx_request_id = to_id(v, At{&w, "ctx_request_id"}.str());
    return r;
}

// Reads the dict; throws BadRecord with the text the writer logs.
PerfMetricsRecord read_record(PyObject* o)
{
    if (!PyDict_Check(o))
        throw BadRecord(fmt::format("record must be a dict, got {}", Py_TYPE(o)->tp_name));
    const At top{};
    const Fields f(o, JSONLW_SHAPE("request_id", "status", "ctx_request_id", "disagg_request_id",
                                   "phases", "traceparent"),
                   top);
    PerfMetricsRecord rec;
    if (PyObject* v = f[0]; v && v != Py_None) rec.request_id = to_id(v, "request_id");
    if (PyObject* v = f[1]; v && v != Py_None) rec.status = to_string(v, "status", 256);
    if (PyObject* v = f[2]; v && v != Py_None) rec.ctx_request_id = to_id(v, "ctx_request_id");
    if (PyObject* v = f[3]; v && v != Py_None) rec.disagg_request_id = to_id(v, "disagg_request_id");
    // The request's traceparent header value: an invalid one is left out (docs/python.md).
    if (PyObject* v = f[5]; v && v != Py_None)
        rec.trace_context = TraceContext::parse_traceparent(to_string(v, "traceparent", 256));
    PyObject* phases_dict = sub_dict(f[4], top, "phases", true);
    const At ph{nullptr, "phases"};
    const Fields phases(phases_dict, JSONLW_SHAPE("disagg", "server", "ctx", "gen"), ph);
    if (PyObject* d = sub_dict(phases[0], ph, "disagg", false)) {
        const At at{&ph, "disagg"};
        const Fields df(d, JSONLW_SHAPE("ctx_server", "gen_server", "timing_metrics"), at);
        DisaggPhase dp;
        if (!df[0]) throw BadRecord(key_error("ctx_server"));
        if (!df[1]) throw BadRecord(key_error("gen_server"));
        dp.ctx_server = to_string(df[0], "phases.disagg.ctx_server", 4096);
        dp.gen_server = to_string(df[1], "phases.disagg.gen_server", 4096);
        const At w{&at, "timing_metrics"};
        const Fields tf(sub_dict(df[2], at, "timing_metrics", true),
                        JSONLW_SHAPE("arrival_time", "last_token_time", "server_arrival_time",
                                     "ctx_dispatch_time", "server_first_token_time"),
                        w);
        dp.timing_metrics.arrival_time = stamp(tf[0], w, "arrival_time");
        dp.timing_metrics.last_token_time = stamp(tf[1], w, "last_token_time");
        dp.timing_metrics.server_arrival_time = stamp(tf[2], w, "server_arrival_time");
        dp.timing_metrics.ctx_dispatch_time = stamp(tf[3], w, "ctx_dispatch_time");
        dp.timing_metrics.server_first_token_time = stamp(tf[4], w, "server_first_token_time");
        rec.disagg = std::move(dp);
        rec.ctx = phase(sub_dict(phases[2], ph, "ctx", true), At{&ph, "ctx"});
        rec.gen = phase(sub_dict(phases[3], ph, "gen", true), At{&ph, "gen"});
    } else if (PyObject* s = sub_dict(phases[1], ph, "server", false)) {
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
                        py::object logger, std::string durability, std::string format,
                        std::string chain, std::optional<std::string> chain_key) {
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
                apply_format_and_chain(extra, format, chain, chain_key);
                try {
                    box->set(std::make_shared<PerfMetricsWriter>(io->executor(), directory, kind,
                                                                 std::move(extra)));
                } catch (const std::invalid_argument& e) {
                    throw py::value_error(e.what());
                }
                return box;
            }),
            py::arg("io"), py::arg("directory"), py::arg("kind"), py::arg("logger"),
            py::arg("durability") = "none", py::arg("format") = "jsonl",
            py::arg("chain") = "none", py::arg("chain_key") = py::none());
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
