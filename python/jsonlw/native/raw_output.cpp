// jsonlw._native.RawOutputWriter: the C++ RawOutputWriter behind TensorRT-LLM's post-processor
// hook. A chunk (PostProcessorHookChunk or a dict of its fields) is read on the caller's
// thread with the GIL held (raw_chunk.cpp) — strings are borrowed from the Python objects,
// which stay alive and immutable for the call — and handed to on_chunk(). The writer queues
// finished records; serialization and appends run on its I/O thread. A chunk that cannot be
// read is counted in bad_chunks (and logged, rate-limited) and never raises.
#include "operator_options.hpp"
#include "raw_box.hpp"
#include "raw_chunk.hpp"

#include <jsonlw/detail/log_marks.hpp>
#include <jsonlw/raw_output_writer.hpp>

#include <fmt/format.h>

#include <structmember.h>

#include <atomic>
#include <cstddef>
#include <utility>

namespace jsonlw::python {
namespace {

py::dict counters_dict(const RawOutputCounters& c)
{
    py::dict d;
    d["pending"] = c.pending;
    d["finished"] = c.finished;
    d["partial"] = c.partial;
    d["evicted"] = c.evicted;
    d["released_empty"] = c.released_empty;
    d["not_recorded"] = c.not_recorded;
    d["hook_failures"] = c.hook_failures;
    d["tokens_without_data"] = c.tokens_without_data;
    d["token_data_orphaned"] = c.token_data_orphaned;
    d["chunks_after_close"] = c.chunks_after_close;
    return d;
}

// What one hook records into and answers with.
struct HookBinding {
    std::shared_ptr<RawBox> box;
    py::object emit;         // the verdict's constructor: emit(text_diff)
    py::object action_type;  // jsonlw's HookAction (a tuple subclass built here), or None
    bool record = false;
};

// One hook call: record the chunk (when recording), then the verdict emit(text_diff) — built
// directly when the action type is jsonlw's HookAction, else by calling `emit`. Returns a new
// reference, or nullptr with a Python error set (only when building the verdict fails:
// recording failures are counted, never raised).
PyObject* hook_call(const HookBinding& h, PyObject* chunk) noexcept
{
    PyObject* text_diff = nullptr;  // new reference
    try {
        if (h.record) {
            RawBox& b = *h.box;
            try {
                ReadChunk r;
                read_chunk(chunk, r);
                // on_chunk() runs with the GIL held: it takes only the hook's own short lock
                // and queues, never does I/O and never needs the GIL, so holding it costs
                // less than a hand-off.
                b.writer().on_chunk(r.chunk);
                text_diff = r.keep_text_diff.release().ptr();
            } catch (const std::exception& e) {
                if (PyErr_Occurred()) PyErr_Clear();
                const std::uint64_t n = b.bad_chunks.fetch_add(1) + 1;
                if (jsonlw::detail::log_worthy(n))
                    b.logs_warning(fmt::format(
                        "Dropped {} raw output chunk(s) that could not be read: {}", n, e.what()));
            }
            b.emit_logs();
        }
    } catch (const std::exception& e) {  // out of memory while logging
        Py_XDECREF(text_diff);
        PyErr_SetString(PyExc_MemoryError, e.what());
        return nullptr;
    }
    if (!text_diff && !(text_diff = verdict_text(chunk))) return nullptr;
    if (!h.action_type.is_none()) {
        PyObject* v = PyType_GenericAlloc(reinterpret_cast<PyTypeObject*>(h.action_type.ptr()), 3);
        if (!v) {
            Py_DECREF(text_diff);
            return nullptr;
        }
        static PyObject* emit_str = PyUnicode_InternFromString("emit");
        if (!emit_str) {
            Py_DECREF(v);
            Py_DECREF(text_diff);
            return nullptr;
        }
        Py_INCREF(emit_str);
        PyTuple_SET_ITEM(v, 0, emit_str);
        PyTuple_SET_ITEM(v, 1, text_diff);
        Py_INCREF(Py_None);
        PyTuple_SET_ITEM(v, 2, Py_None);
        return v;
    }
    PyObject* v = PyObject_CallOneArg(h.emit.ptr(), text_diff);
    Py_DECREF(text_diff);
    return v;
}

// jsonlw._native.RawOutputHook, the base class of jsonlw.trtllm.RawOutputDump: calling an
// instance is the hook call, done here (tp_call), so a chunk costs no Python frame and no
// attribute lookup on the instance. bind_hook() sets what it records into.
struct HookObject {
    PyObject_HEAD
    vectorcallfunc vectorcall;  // hook_vectorcall: a call passes the chunk without a tuple
    HookBinding* binding;
};

PyTypeObject* hook_type = nullptr;

// Never raises into the server: when the verdict cannot be built the first time it is built
// again from a fresh read of text_diff, as TensorRT-LLM's fail-open hook does.
PyObject* hook_entry(PyObject* self, PyObject* chunk)
{
    const HookBinding* h = reinterpret_cast<HookObject*>(self)->binding;
    if (!h) {
        PyErr_SetString(PyExc_RuntimeError, "the hook is not initialized (RawOutputDump.__init__)");
        return nullptr;
    }
    if (PyObject* v = hook_call(*h, chunk)) return v;
    PyErr_Clear();
    PyObject* text = verdict_text(chunk);
    if (!text) return nullptr;
    PyObject* v = PyObject_CallOneArg(h->emit.ptr(), text);
    Py_DECREF(text);
    return v;
}

PyObject* hook_tp_call(PyObject* self, PyObject* args, PyObject* kwargs)
{
    if ((kwargs && PyDict_GET_SIZE(kwargs) != 0) || PyTuple_GET_SIZE(args) != 1) {
        PyErr_SetString(PyExc_TypeError, "the hook takes one argument, the chunk");
        return nullptr;
    }
    return hook_entry(self, PyTuple_GET_ITEM(args, 0));
}

PyObject* hook_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames)
{
    if ((kwnames && PyTuple_GET_SIZE(kwnames) != 0) || PyVectorcall_NARGS(nargsf) != 1) {
        PyErr_SetString(PyExc_TypeError, "the hook takes one argument, the chunk");
        return nullptr;
    }
    return hook_entry(self, args[0]);
}

PyObject* hook_new(PyTypeObject* type, PyObject* args, PyObject* kwargs)
{
    PyObject* self = PyType_GenericNew(type, args, kwargs);
    if (self) reinterpret_cast<HookObject*>(self)->vectorcall = hook_vectorcall;
    return self;
}

void hook_dealloc(PyObject* self)
{
    PyTypeObject* tp = Py_TYPE(self);
    delete std::exchange(reinterpret_cast<HookObject*>(self)->binding, nullptr);
    tp->tp_free(self);
    Py_DECREF(tp);  // a heap type's instance holds its type
}

PyMethodDef hook_methods[] = {
    {"on_chunk", hook_entry, METH_O, "The hook call: records the chunk, returns emit(text_diff)."},
    {nullptr, nullptr, 0, nullptr},
};

PyMemberDef hook_members[] = {
    {const_cast<char*>("__vectorcalloffset__"), T_PYSSIZET, offsetof(HookObject, vectorcall), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

PyType_Slot hook_slots[] = {
    {Py_tp_doc, const_cast<char*>("The post-processor hook: calling it with a chunk records the "
                                  "chunk and returns emit(chunk.text_diff); never raises.")},
    {Py_tp_call, reinterpret_cast<void*>(hook_tp_call)},
    {Py_tp_dealloc, reinterpret_cast<void*>(hook_dealloc)},
    {Py_tp_methods, hook_methods},
    {Py_tp_members, hook_members},
    {Py_tp_new, reinterpret_cast<void*>(hook_new)},
    {0, nullptr},
};

PyType_Spec hook_spec = {"jsonlw._native.RawOutputHook", sizeof(HookObject), 0,
                         Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_VECTORCALL,
                         hook_slots};

}  // namespace

void register_raw_output(py::module_& m)
{
    hook_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&hook_spec));
    if (!hook_type) throw py::error_already_set();
    m.add_object("RawOutputHook", py::handle(reinterpret_cast<PyObject*>(hook_type)));

    py::class_<RawBox, std::shared_ptr<RawBox>> cls(m, "RawOutputWriter",
        "jsonlw::RawOutputWriter (the C++ writer) behind the post-processor hook.");
    cls.def(py::init([](std::shared_ptr<IoContext> io, std::string directory, py::object logger,
                        std::size_t max_pending, std::string capture, std::string format,
                        std::string chain, std::optional<std::string> chain_key) {
                if (max_pending == 0) throw py::value_error("max_pending must be at least 1");
                auto logs = std::make_shared<LogQueue>();
                auto box = std::make_shared<RawBox>(io, logs, logger);
                RawOutputOptions o;
                o.directory = directory;
                o.max_pending = max_pending;
                o.log = logs->sink();
                o.capture = capture_arg(capture);
                apply_format_and_chain(o, format, chain, chain_key);
                box->set(std::make_shared<RawOutputWriter>(io->executor(), std::move(o)));
                box->emit_logs();
                return box;
            }),
            py::arg("io"), py::arg("directory"), py::arg("logger"),
            py::arg("max_pending") = 4096, py::arg("capture") = "full",
            py::arg("format") = "jsonl", py::arg("chain") = "none",
            py::arg("chain_key") = py::none());
    // Makes `hook` (a RawOutputHook) record into this writer and answer with emit(text_diff).
    // `action_type`: jsonlw's HookAction (a tuple subclass built directly), or None to call
    // `emit`.
    cls.def("bind_hook", [](std::shared_ptr<RawBox> b, py::handle hook, py::object emit,
                            py::object action_type, bool record) {
        if (!PyObject_TypeCheck(hook.ptr(), hook_type))
            throw py::type_error("bind_hook() needs a jsonlw._native.RawOutputHook");
        if (!action_type.is_none() &&
            !(PyType_Check(action_type.ptr()) &&
              PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(action_type.ptr()), &PyTuple_Type)))
            throw py::type_error("action_type must be a tuple subclass or None");
        auto* binding = new HookBinding{std::move(b), std::move(emit), std::move(action_type), record};
        delete std::exchange(reinterpret_cast<HookObject*>(hook.ptr())->binding, binding);
    });
    // Python 3.12 lets a subclass that keeps RawOutputHook's __call__ inherit its vectorcall;
    // 3.11 only for immutable types, so RawOutputDump asks for it here (a call then passes
    // the chunk without building an argument tuple).
    m.def("inherit_hook_vectorcall", [](py::handle cls) {
        if (!PyType_Check(cls.ptr()) ||
            !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(cls.ptr()), hook_type))
            throw py::type_error("inherit_hook_vectorcall() needs a RawOutputHook subclass");
        auto* t = reinterpret_cast<PyTypeObject*>(cls.ptr());
        if (t->tp_call != hook_type->tp_call) return false;  // __call__ overridden: keep it
        t->tp_vectorcall_offset = hook_type->tp_vectorcall_offset;
        t->tp_flags |= Py_TPFLAGS_HAVE_VECTORCALL;
        return true;
    });
    // Returns False when the chunk could not be read (counted in bad_chunks).
    cls.def("on_chunk", [](RawBox& b, py::handle chunk) {
        ReadChunk r;
        try {
            read_chunk(chunk.ptr(), r);
        } catch (const std::exception& e) {
            if (PyErr_Occurred()) PyErr_Clear();
            const std::uint64_t n = b.bad_chunks.fetch_add(1) + 1;
            if (jsonlw::detail::log_worthy(n))
                b.logs_warning(fmt::format("Dropped {} raw output chunk(s) that could not be read: {}", n, e.what()));
            b.emit_logs();
            return false;
        }
        {
            py::gil_scoped_release unlocked;
            b.writer().on_chunk(r.chunk);
        }
        b.emit_logs();
        return true;
    });
    cls.def("on_request_end", [](RawBox& b, std::uint64_t request_id, std::string reason) {
        {
            py::gil_scoped_release unlocked;
            b.writer().on_request_end(request_id, reason);
        }
        b.emit_logs();
    });
    cls.def("end_all", [](RawBox& b, std::string reason) {
        {
            py::gil_scoped_release unlocked;
            b.writer().end_all(reason);
        }
        b.emit_logs();
    });
    cls.def("counters", [](const RawBox& b) {
        b.emit_logs();
        py::dict d = counters_dict(b.writer().counters());
        d["bad_chunks"] = b.bad_chunks.load();
        return d;
    });
    cls.def_property_readonly("recording", [](const RawBox& b) { return b.writer().recording(); });
    cls.def_property_readonly("pending_outputs",
                              [](const RawBox& b) { return b.writer().pending_outputs(); });
    cls.def_property_readonly("max_pending", [](const RawBox& b) { return b.writer().max_pending(); });
    cls.def_property_readonly("bad_chunks", [](const RawBox& b) { return b.bad_chunks.load(); });
    // RawOutputDump's `_dropped` (a plain int in TensorRT-LLM), read live: records and chunks
    // lost in the hook (failures, unreadable chunks, not recorded) plus the writer's drops.
    cls.def("dropped_source", [](std::shared_ptr<RawBox> b) {
        return live_count_source([b = std::move(b)]() noexcept -> std::uint64_t {
            b->emit_logs();
            const RawOutputCounters c = b->writer().counters();
            return c.hook_failures + c.not_recorded + b->bad_chunks.load() +
                   b->writer().stats().dropped.total();
        });
    });
    bind_writer_common<RawBox>(cls);

    m.def("raw_output_dir_from_env", [] { return raw_output_dir_from_env().string(); });
}

}  // namespace jsonlw::python
