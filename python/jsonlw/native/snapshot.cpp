// jsonlw._native.SnapshotStage: the token/logit snapshot stage (lib/snapshot) for Python.
// capture() takes any 2-D logits array — the buffer protocol (numpy on the CPU),
// __cuda_array_interface__ or __dlpack__ (torch, cupy on the GPU) — reads its pointer, dtype
// and row stride with the GIL held, and runs the stage with the GIL released (the CPU backend
// computes before returning; the CUDA one queues on the caller's stream). Results go, on the
// stage's thread and without the GIL, to a raw-output writer (record_token_data) and/or a
// bounded store that results() turns into numpy arrays.
#include "raw_box.hpp"

#include <jsonlw/raw_output_snapshot.hpp>
#include <jsonlw/snapshot/reference.hpp>
#include <jsonlw/snapshot/stage.hpp>

#include <pybind11/numpy.h>

#include <fmt/format.h>

#include <cstring>
#include <deque>
#include <mutex>

namespace jsonlw::python {
namespace {

namespace snap = jsonlw::snapshot;

// --- DLPack (the ABI of dlpack.h v0.x, which every producer still speaks) ------------------
struct DLDevice {
    std::int32_t device_type;
    std::int32_t device_id;
};
struct DLDataType {
    std::uint8_t code;
    std::uint8_t bits;
    std::uint16_t lanes;
};
struct DLTensor {
    void* data;
    DLDevice device;
    std::int32_t ndim;
    DLDataType dtype;
    std::int64_t* shape;
    std::int64_t* strides;
    std::uint64_t byte_offset;
};
struct DLManagedTensor {
    DLTensor dl_tensor;
    void* manager_ctx;
    void (*deleter)(DLManagedTensor*);
};
constexpr std::int32_t kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLCUDAManaged = 13;
constexpr std::uint8_t kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4;

// What one array argument resolved to. Keeps the producer's object (and DLPack tensor) alive
// until capture() returns.
struct ArrayRef {
    const void* data = nullptr;
    int device = -1;  // -1 host
    std::vector<std::int64_t> shape;
    std::vector<std::int64_t> strides;  // in elements
    char kind = 0;                      // 'f' float, 'i' int, 'u' uint, 'b' bfloat
    int bits = 0;
    std::optional<std::uintptr_t> producer_stream;  // __cuda_array_interface__'s "stream"
    std::optional<py::buffer_info> buffer;
    DLManagedTensor* dl = nullptr;
    py::object owner;

    ArrayRef() = default;
    ArrayRef(ArrayRef&& o) noexcept
        : data(o.data), device(o.device), shape(std::move(o.shape)), strides(std::move(o.strides)),
          kind(o.kind), bits(o.bits), producer_stream(o.producer_stream),
          buffer(std::move(o.buffer)), dl(std::exchange(o.dl, nullptr)), owner(std::move(o.owner))
    {
    }
    ~ArrayRef()
    {
        if (dl && dl->deleter) dl->deleter(dl);
    }
};

std::optional<std::uintptr_t> stream_handle(py::handle stream)
{
    if (!stream || stream.is_none()) return std::nullopt;
    if (py::hasattr(stream, "cuda_stream")) return stream.attr("cuda_stream").cast<std::uintptr_t>();
    if (py::hasattr(stream, "ptr")) return stream.attr("ptr").cast<std::uintptr_t>();
    return stream.cast<std::uintptr_t>();
}

void from_typestr(ArrayRef& a, const std::string& t)
{
    // numpy typestr: "<f4", "<f2", "<u2", "<i4", "|u1"...
    if (t.size() < 3 || (t[0] != '<' && t[0] != '|' && t[0] != '='))
        throw py::value_error("only little-endian arrays are supported, got typestr '" + t + "'");
    a.kind = t[1];
    a.bits = std::stoi(t.substr(2)) * 8;
}

ArrayRef from_buffer(py::handle obj)
{
    ArrayRef a;
    py::buffer buf = py::reinterpret_borrow<py::buffer>(obj);
    a.buffer = buf.request();
    const py::buffer_info& b = *a.buffer;
    std::string f = b.format;
    if (!f.empty() && (f[0] == '<' || f[0] == '=' || f[0] == '@')) f = f.substr(1);
    if (f == "f") a.kind = 'f', a.bits = 32;
    else if (f == "e") a.kind = 'f', a.bits = 16;
    else if (f == "H") a.kind = 'u', a.bits = 16;
    else if (f == "h") a.kind = 'i', a.bits = 16;
    else if (f == "i" || (f == "l" && b.itemsize == 4)) a.kind = 'i', a.bits = 32;
    else if (f == "I") a.kind = 'u', a.bits = 32;
    else if ((f == "l" || f == "q") && b.itemsize == 8) a.kind = 'i', a.bits = 64;
    else throw py::value_error("unsupported buffer format '" + b.format + "'");
    a.data = b.ptr;
    a.shape.assign(b.shape.begin(), b.shape.end());
    for (auto s : b.strides) {
        if (s % b.itemsize) throw py::value_error("strides must be whole elements");
        a.strides.push_back(s / b.itemsize);
    }
    a.owner = py::reinterpret_borrow<py::object>(obj);
    return a;
}

ArrayRef from_cai(py::handle obj, int device)
{
    ArrayRef a;
    py::dict cai = obj.attr("__cuda_array_interface__");
    py::tuple d = cai["data"];
    a.data = reinterpret_cast<const void*>(d[0].cast<std::uintptr_t>());
    from_typestr(a, cai["typestr"].cast<std::string>());
    for (auto s : cai["shape"]) a.shape.push_back(s.cast<std::int64_t>());
    const std::int64_t item = a.bits / 8;
    if (cai.contains("strides") && !cai["strides"].is_none()) {
        for (auto s : cai["strides"]) {
            const auto v = s.cast<std::int64_t>();
            if (v % item) throw py::value_error("strides must be whole elements");
            a.strides.push_back(v / item);
        }
    } else {
        std::int64_t st = 1;
        a.strides.assign(a.shape.size(), 1);
        for (std::size_t i = a.shape.size(); i-- > 0;) {
            a.strides[i] = st;
            st *= a.shape[i];
        }
    }
    if (cai.contains("stream") && !cai["stream"].is_none())
        a.producer_stream = cai["stream"].cast<std::uintptr_t>();
    a.device = device;
    a.owner = py::reinterpret_borrow<py::object>(obj);
    return a;
}

ArrayRef from_dlpack(py::handle obj, std::optional<std::uintptr_t> stream)
{
    ArrayRef a;
    py::tuple dev = obj.attr("__dlpack_device__")();
    const int dev_type = dev[0].cast<int>();
    py::object cap = (dev_type == kDLCUDA && stream) ? obj.attr("__dlpack__")(py::arg("stream") = *stream)
                                                    : obj.attr("__dlpack__")();
    auto* mt = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap.ptr(), "dltensor"));
    if (!mt) throw py::error_already_set();
    PyCapsule_SetName(cap.ptr(), "used_dltensor");
    a.dl = mt;
    const DLTensor& t = mt->dl_tensor;
    if (t.dtype.lanes != 1) throw py::value_error("vector dtypes are not supported");
    switch (t.dtype.code) {
    case kDLFloat: a.kind = 'f'; break;
    case kDLBfloat: a.kind = 'b'; break;
    case kDLInt: a.kind = 'i'; break;
    case kDLUInt: a.kind = 'u'; break;
    default: throw py::value_error("unsupported DLPack dtype code " + std::to_string(t.dtype.code));
    }
    a.bits = t.dtype.bits;
    a.data = static_cast<const char*>(t.data) + t.byte_offset;
    a.shape.assign(t.shape, t.shape + t.ndim);
    if (t.strides) a.strides.assign(t.strides, t.strides + t.ndim);
    else {
        a.strides.assign(std::size_t(t.ndim), 1);
        std::int64_t st = 1;
        for (int i = t.ndim; i-- > 0;) {
            a.strides[std::size_t(i)] = st;
            st *= t.shape[i];
        }
    }
    if (t.device.device_type == kDLCPU || t.device.device_type == kDLCUDAHost) a.device = -1;
    else if (t.device.device_type == kDLCUDA || t.device.device_type == kDLCUDAManaged)
        a.device = t.device.device_id;
    else throw py::value_error("unsupported DLPack device type " + std::to_string(t.device.device_type));
    a.owner = py::reinterpret_borrow<py::object>(obj);
    return a;
}

ArrayRef resolve(py::handle obj, std::optional<std::uintptr_t> stream, int cai_device)
{
    if (PyObject_CheckBuffer(obj.ptr())) return from_buffer(obj);
    if (py::hasattr(obj, "__cuda_array_interface__")) return from_cai(obj, cai_device);
    if (py::hasattr(obj, "__dlpack__")) return from_dlpack(obj, stream);
    throw py::type_error(std::string("expected an array with the buffer protocol, "
                                     "__cuda_array_interface__ or __dlpack__, got ") +
                         Py_TYPE(obj.ptr())->tp_name);
}

snap::LogitDType logit_dtype(const ArrayRef& a, const std::optional<std::string>& dtype)
{
    if (dtype) {
        const int want = *dtype == "float32" ? 32 : (*dtype == "float16" || *dtype == "bfloat16") ? 16 : 0;
        if (!want) throw py::value_error("dtype must be 'float32', 'float16' or 'bfloat16'");
        if (a.bits != want) throw py::value_error("dtype '" + *dtype + "' does not match the array's element size");
        return *dtype == "float32" ? snap::LogitDType::f32
               : *dtype == "float16" ? snap::LogitDType::f16 : snap::LogitDType::bf16;
    }
    if (a.kind == 'f' && a.bits == 32) return snap::LogitDType::f32;
    if (a.kind == 'f' && a.bits == 16) return snap::LogitDType::f16;
    if (a.kind == 'b' && a.bits == 16) return snap::LogitDType::bf16;
    if (a.bits == 16)
        throw py::value_error("a 16-bit integer array needs dtype='bfloat16' (numpy has no bf16: "
                              "pass the bits as a uint16 view) or dtype='float16'");
    throw py::value_error("logits must be float32, float16 or bfloat16");
}

// --- stored results ------------------------------------------------------------------------
struct StoredFirstGen {
    std::uint64_t request_id;
    std::uint32_t seq_index, step;
    snap::LogitDType dtype;
    std::int64_t vocab;
    std::vector<std::byte> bytes;
    std::uint32_t overflow_to_inf;
};
struct StoredBatch {
    std::uint64_t batch_seq = 0, gap_before = 0;
    bool failed = false;
    std::vector<snap::TokenSnapshot> rows;
    std::vector<StoredFirstGen> first_gen;
};
struct Store {
    std::mutex mutex;
    std::deque<StoredBatch> batches;
    std::size_t max_batches = 1024;
    std::uint64_t discarded = 0;
};

class PyStage {
public:
    PyStage(snap::SnapshotConfig config, snap::Backend backend, bool keep_results,
            std::size_t max_kept_batches, py::object raw)
        : store_(std::make_shared<Store>()), keep_(keep_results)
    {
        store_->max_batches = max_kept_batches;
        std::shared_ptr<RawOutputWriter> writer;
        std::shared_ptr<IoContext> io;
        if (!raw.is_none()) {
            auto box = raw.cast<std::shared_ptr<RawBox>>();
            writer = box->shared();
            io = box->io_shared();
        }
        auto store = store_;
        const bool keep = keep_;
        auto sink = [store, keep, writer, io, config](snap::SnapshotBatch&& b) {
            if (keep) {
                StoredBatch s;
                s.batch_seq = b.batch_seq;
                s.gap_before = b.gap_before;
                s.failed = b.failed;
                if (!b.failed) {
                    s.rows.assign(b.rows.begin(), b.rows.end());
                    for (const auto& f : b.first_gen)
                        s.first_gen.push_back({f.request_id, f.seq_index, f.step, f.dtype, f.shape[1],
                                               {f.bytes.begin(), f.bytes.end()}, f.overflow_to_inf});
                }
                std::lock_guard lock(store->mutex);
                if (store->batches.size() >= store->max_batches) {
                    store->batches.pop_front();
                    ++store->discarded;
                }
                store->batches.push_back(std::move(s));
            }
            if (writer) record_token_data(*writer, std::move(b), config);
            else b.lease.release();
        };
        try {
            stage_ = snap::SnapshotStage::create(config, backend, std::move(sink));
        } catch (const std::invalid_argument& e) {
            throw py::value_error(e.what());
        }
    }

    ~PyStage()
    {
        py::gil_scoped_release unlocked;
        stage_.reset();
    }

    snap::CaptureResult capture(py::handle logits, py::handle sampled_ids, py::handle metas,
                                py::handle stream, std::optional<std::string> dtype, int device)
    {
        std::optional<std::uintptr_t> s = stream_handle(stream);
        ArrayRef lg = resolve(logits, s, device);
        if (lg.shape.size() != 2) throw py::value_error("logits must be 2-D [rows, vocab]");
        if (lg.strides[1] != 1) throw py::value_error("logits rows must be contiguous (last stride 1)");
        snap::LogitsView view;
        view.data = lg.data;
        view.dtype = logit_dtype(lg, dtype);
        view.rows = static_cast<std::int32_t>(lg.shape[0]);
        view.vocab = static_cast<std::int32_t>(lg.shape[1]);
        view.row_stride = lg.strides[0];
        view.device = lg.device;
        if (!s && lg.producer_stream) s = lg.producer_stream;

        // Sampled ids: same side as the logits.
        std::vector<std::int32_t> host_ids;
        const std::int32_t* ids = nullptr;
        std::optional<ArrayRef> id_ref;
        if (PyList_Check(sampled_ids.ptr()) || PyTuple_Check(sampled_ids.ptr())) {
            if (lg.device >= 0) throw py::value_error("device logits need device sampled_ids");
            host_ids = sampled_ids.cast<std::vector<std::int32_t>>();
            ids = host_ids.data();
            if (std::int64_t(host_ids.size()) != lg.shape[0]) throw py::value_error("one sampled id per row");
        } else {
            id_ref.emplace(resolve(sampled_ids, s, device));
            const ArrayRef& r = *id_ref;
            if (r.device != lg.device) throw py::value_error("sampled_ids must be where the logits are");
            if (r.shape.size() != 1 || r.shape[0] != lg.shape[0])
                throw py::value_error("sampled_ids must be 1-D with one id per row");
            if (r.bits == 32 && (r.kind == 'i' || r.kind == 'u') && r.strides[0] == 1) {
                ids = static_cast<const std::int32_t*>(r.data);
            } else if (r.device < 0 && (r.kind == 'i' || r.kind == 'u') && (r.bits == 64 || r.bits == 32)) {
                host_ids.resize(std::size_t(r.shape[0]));
                for (std::int64_t i = 0; i < r.shape[0]; ++i)
                    host_ids[std::size_t(i)] = r.bits == 64
                        ? std::int32_t(static_cast<const std::int64_t*>(r.data)[i * r.strides[0]])
                        : static_cast<const std::int32_t*>(r.data)[i * r.strides[0]];
                ids = host_ids.data();
            } else {
                throw py::value_error("sampled_ids must be int32 (or host int64)");
            }
        }

        std::vector<snap::RowMeta> meta;
        for (py::handle m : metas) {
            snap::RowMeta r;
            if (PyDict_Check(m.ptr())) {
                py::dict d = py::reinterpret_borrow<py::dict>(m);
                r.request_id = d["request_id"].cast<std::uint64_t>();
                r.seq_index = d.contains("seq_index") ? d["seq_index"].cast<std::uint32_t>() : 0;
                r.step = d.contains("step") ? d["step"].cast<std::uint32_t>() : 0;
                if (d.contains("first_gen") && d["first_gen"].cast<bool>()) r.flags |= snap::RowMeta::first_gen;
            } else {
                py::sequence t = py::reinterpret_borrow<py::sequence>(m);
                if (t.size() < 3 || t.size() > 4)
                    throw py::value_error("a meta is (request_id, seq_index, step[, first_gen])");
                r.request_id = t[0].cast<std::uint64_t>();
                r.seq_index = t[1].cast<std::uint32_t>();
                r.step = t[2].cast<std::uint32_t>();
                if (t.size() == 4 && t[3].cast<bool>()) r.flags |= snap::RowMeta::first_gen;
            }
            meta.push_back(r);
        }
        void* cuda_stream = s ? reinterpret_cast<void*>(*s) : nullptr;
        snap::CaptureResult res;
        {
            py::gil_scoped_release unlocked;
            res = stage_->capture(view, ids, meta, cuda_stream);
        }
        if (res == snap::CaptureResult::invalid_argument)
            throw py::value_error("capture refused: " + stage_->stats().last_error);
        return res;
    }

    bool drain(double timeout_s)
    {
        py::gil_scoped_release unlocked;
        return stage_->drain(std::chrono::milliseconds(static_cast<long>(timeout_s * 1000)));
    }

    py::list take_results()
    {
        std::deque<StoredBatch> batches;
        {
            std::lock_guard lock(store_->mutex);
            batches.swap(store_->batches);
        }
        py::list out;
        const int k = stage_->config().k;
        for (StoredBatch& b : batches) {
            const py::ssize_t n = py::ssize_t(b.rows.size());
            py::array_t<std::uint64_t> request_id(n);
            py::array_t<std::uint32_t> seq_index(n), step(n), sampled_rank(n), nan_count(n), posinf_count(n);
            py::array_t<std::int32_t> sampled_id(n);
            py::array_t<float> sampled_logit(n), sampled_logprob(n), lse(n);
            py::array_t<std::uint16_t> status_flags(n);
            py::array_t<std::int32_t> topk_ids({n, py::ssize_t(k)});
            py::array_t<float> topk_logits({n, py::ssize_t(k)}), topk_logprobs({n, py::ssize_t(k)});
            for (py::ssize_t i = 0; i < n; ++i) {
                const snap::TokenSnapshot& r = b.rows[std::size_t(i)];
                request_id.mutable_at(i) = r.request_id;
                seq_index.mutable_at(i) = r.seq_index;
                step.mutable_at(i) = r.step;
                sampled_id.mutable_at(i) = r.sampled_id;
                sampled_logit.mutable_at(i) = r.sampled_logit;
                sampled_logprob.mutable_at(i) = r.sampled_logprob;
                sampled_rank.mutable_at(i) = r.sampled_rank;
                lse.mutable_at(i) = r.lse;
                nan_count.mutable_at(i) = r.nan_count;
                posinf_count.mutable_at(i) = r.posinf_count;
                status_flags.mutable_at(i) = r.status_flags;
                for (int j = 0; j < k; ++j) {
                    topk_ids.mutable_at(i, j) = j < r.k ? r.topk_ids[j] : -1;
                    topk_logits.mutable_at(i, j) = j < r.k ? r.topk_logits[j] : std::nanf("");
                    topk_logprobs.mutable_at(i, j) = j < r.k ? r.topk_logprobs[j] : std::nanf("");
                }
            }
            py::list fg;
            for (const StoredFirstGen& f : b.first_gen) {
                py::dict d;
                d["request_id"] = f.request_id;
                d["seq_index"] = f.seq_index;
                d["step"] = f.step;
                d["dtype"] = snap::dtype_name(f.dtype);
                d["overflow_to_inf"] = f.overflow_to_inf;
                d["bytes"] = py::bytes(reinterpret_cast<const char*>(f.bytes.data()), f.bytes.size());
                d["vocab"] = f.vocab;
                fg.append(d);
            }
            py::dict d;
            d["batch_seq"] = b.batch_seq;
            d["gap_before"] = b.gap_before;
            d["failed"] = b.failed;
            d["request_id"] = request_id;
            d["seq_index"] = seq_index;
            d["step"] = step;
            d["sampled_id"] = sampled_id;
            d["sampled_logit"] = sampled_logit;
            d["sampled_logprob"] = sampled_logprob;
            d["sampled_rank"] = sampled_rank;
            d["lse"] = lse;
            d["nan_count"] = nan_count;
            d["posinf_count"] = posinf_count;
            d["status_flags"] = status_flags;
            d["topk_ids"] = topk_ids;
            d["topk_logits"] = topk_logits;
            d["topk_logprobs"] = topk_logprobs;
            d["first_gen"] = fg;
            out.append(d);
        }
        return out;
    }

    py::dict stats() const
    {
        const snap::SnapshotStats s = stage_->stats();
        py::dict d;
        d["backend"] = snap::to_string(s.backend);
        d["captured_steps"] = s.captured_steps;
        d["captured_rows"] = s.captured_rows;
        d["dropped_steps"] = s.dropped_steps;
        d["dropped_rows"] = s.dropped_rows;
        d["invalid_arguments"] = s.invalid_arguments;
        d["delivered_batches"] = s.delivered_batches;
        d["failed_batches"] = s.failed_batches;
        d["sink_failures"] = s.sink_failures;
        d["first_gen_rows"] = s.first_gen_rows;
        d["first_gen_dropped"] = s.first_gen_dropped;
        d["in_flight"] = s.in_flight;
        d["leased"] = s.leased;
        d["last_error"] = s.last_error;
        std::lock_guard lock(store_->mutex);
        d["results_discarded"] = store_->discarded;
        return d;
    }

    std::string backend() const { return snap::to_string(stage_->backend()); }
    int k() const { return stage_->config().k; }

private:
    std::shared_ptr<Store> store_;
    bool keep_;
    std::unique_ptr<snap::SnapshotStage> stage_;
};

snap::FirstGenMode first_gen_mode(const std::string& m)
{
    if (m == "off") return snap::FirstGenMode::off;
    if (m == "float16_compat") return snap::FirstGenMode::float16_compat;
    if (m == "float32_exact") return snap::FirstGenMode::float32_exact;
    if (m == "bfloat16_raw") return snap::FirstGenMode::bfloat16_raw;
    throw py::value_error("first_gen must be 'off', 'float16_compat', 'float32_exact' or 'bfloat16_raw'");
}

snap::Backend backend_of(const std::string& b)
{
    if (b == "auto") return snap::Backend::automatic;
    if (b == "cpu") return snap::Backend::cpu;
    if (b == "cuda") return snap::Backend::cuda;
    throw py::value_error("backend must be 'auto', 'cpu' or 'cuda'");
}

}  // namespace

void register_snapshot(py::module_& m)
{
    py::enum_<snap::CaptureResult>(m, "CaptureResult")
        .value("enqueued", snap::CaptureResult::enqueued)
        .value("dropped", snap::CaptureResult::dropped)
        .value("invalid_argument", snap::CaptureResult::invalid_argument);

    py::class_<PyStage>(m, "SnapshotStage")
        .def(py::init([](int k, bool topk_logits, bool topk_logprobs, bool sampled_logprob,
                         bool sampled_rank, bool nan_count, std::string first_gen, int max_rows,
                         int max_vocab, int ring_slots, double slot_wait_s, int cpu_threads,
                         std::string backend, bool keep_results, std::size_t max_kept_batches,
                         py::object raw) {
                 snap::SnapshotConfig c;
                 c.k = k;
                 c.topk_logits = topk_logits;
                 c.topk_logprobs = topk_logprobs;
                 c.sampled_logprob = sampled_logprob;
                 c.sampled_rank = sampled_rank;
                 c.nan_count = nan_count;
                 c.first_gen = first_gen_mode(first_gen);
                 c.max_rows = max_rows;
                 c.max_vocab = max_vocab;
                 c.ring_slots = ring_slots;
                 c.slot_wait = std::chrono::microseconds(static_cast<long>(slot_wait_s * 1e6));
                 c.cpu_threads = cpu_threads;
                 return std::make_unique<PyStage>(c, backend_of(backend), keep_results,
                                                  max_kept_batches, std::move(raw));
             }),
             py::arg("k"), py::arg("topk_logits"), py::arg("topk_logprobs"),
             py::arg("sampled_logprob"), py::arg("sampled_rank"), py::arg("nan_count"),
             py::arg("first_gen"), py::arg("max_rows"), py::arg("max_vocab"),
             py::arg("ring_slots"), py::arg("slot_wait_s"), py::arg("cpu_threads"),
             py::arg("backend"), py::arg("keep_results"), py::arg("max_kept_batches"),
             py::arg("raw"))
        .def("capture", &PyStage::capture, py::arg("logits"), py::arg("sampled_ids"),
             py::arg("metas"), py::arg("stream") = py::none(), py::arg("dtype") = py::none(),
             py::arg("device") = 0)
        .def("drain", &PyStage::drain, py::arg("timeout") = 5.0)
        .def("take_results", &PyStage::take_results)
        .def("stats", &PyStage::stats)
        .def_property_readonly("backend", &PyStage::backend)
        .def_property_readonly("k", &PyStage::k);

    m.def("cuda_device_count", [] { return snap::cuda_device_count(); });

    // The CPU reference for one row (tests compare the stage with it).
    m.def("snapshot_reference_row", [](py::buffer row, std::string dtype, std::int32_t sampled_id, int k) {
        py::buffer_info b = row.request();
        if (b.ndim != 1) throw py::value_error("one 1-D row");
        const snap::LogitDType t = dtype == "float32" ? snap::LogitDType::f32
                                   : dtype == "float16" ? snap::LogitDType::f16
                                   : dtype == "bfloat16" ? snap::LogitDType::bf16
                                   : throw py::value_error("dtype");
        if (b.itemsize != py::ssize_t(snap::itemsize(t)) || b.strides[0] != b.itemsize)
            throw py::value_error("a contiguous row of the given dtype");
        snap::TokenSnapshot out{};
        snap::RowScratch scratch;
        {
            py::gil_scoped_release unlocked;
            snap::reference_row(b.ptr, t, std::int32_t(b.shape[0]), sampled_id, k, out, scratch);
        }
        py::dict d;
        d["sampled_id"] = out.sampled_id;
        d["sampled_logit"] = out.sampled_logit;
        d["sampled_logprob"] = out.sampled_logprob;
        d["sampled_rank"] = out.sampled_rank;
        d["lse"] = out.lse;
        d["nan_count"] = out.nan_count;
        d["posinf_count"] = out.posinf_count;
        d["status_flags"] = out.status_flags;
        d["topk_ids"] = std::vector<std::int32_t>(out.topk_ids, out.topk_ids + out.k);
        d["topk_logits"] = std::vector<float>(out.topk_logits, out.topk_logits + out.k);
        d["topk_logprobs"] = std::vector<float>(out.topk_logprobs, out.topk_logprobs + out.k);
        return d;
    });
}

}  // namespace jsonlw::python
