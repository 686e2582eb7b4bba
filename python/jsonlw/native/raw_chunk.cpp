// Reading a hook chunk: the per-chunk cost of RawOutputDump on the caller's loop, so nothing
// here allocates on the good path. An object whose attributes come from its instance dict
// alone (types.SimpleNamespace, a plain class or dataclass: generic getattr and no data
// descriptor of these names on the type, checked once per type version) is read by walking
// that dict once; anything else by one attribute lookup per field that never builds an
// AttributeError for an absent one (an older chunk type lacks token_data_follows, say).
#include "raw_chunk.hpp"

#include "dict_shape.hpp"

#include <fmt/format.h>

#include <new>
#include <utility>

namespace jsonlw::python {
namespace {

// The chunk's fields, in the order they are read and checked.
enum Field : int {
    f_request_id, f_output_index, f_text_diff, f_text, f_token_ids_diff, f_is_final,
    f_token_data_follows, f_aborted, f_streaming, f_disagg_request_id, field_count
};

const DictShape<field_count>& shape()
{
    static const DictShape<field_count> s({"request_id", "output_index", "text_diff", "text",
                                           "token_ids_diff", "is_final", "token_data_follows",
                                           "aborted", "streaming", "disagg_request_id"});
    return s;
}

// An owned reference (Py_XDECREF when it goes), lighter than py::object on this path.
class Ref {
public:
    Ref() = default;
    explicit Ref(PyObject* owned) noexcept : p_(owned) {}
    Ref(Ref&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
    Ref& operator=(Ref&& o) noexcept
    {
        std::swap(p_, o.p_);
        return *this;
    }
    ~Ref() { Py_XDECREF(p_); }
    PyObject* get() const noexcept { return p_; }
    PyObject* release() noexcept { return std::exchange(p_, nullptr); }
    explicit operator bool() const noexcept { return p_ != nullptr; }

private:
    PyObject* p_ = nullptr;
};

int lookup_attr(PyObject* obj, PyObject* name, PyObject** out)
{
#if PY_VERSION_HEX >= 0x030D0000
    return PyObject_GetOptionalAttr(obj, name, out);
#else
    return _PyObject_LookupAttr(obj, name, out);
#endif
}

// What a type's instances need: whether their instance dict holds all there is to read, and
// which of the names the type itself defines (read by getattr when the instance lacks them).
struct TypeInfo {
    PyTypeObject* type = nullptr;
    unsigned int version = 0;
    bool dict_only = false;
    std::uint16_t on_type = 0;
};

TypeInfo type_info(PyTypeObject* t)
{
    static TypeInfo last;  // one entry: a server passes one chunk type (GIL held)
    if (last.type == t && (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) &&
        last.version == t->tp_version_tag)
        return last;
    TypeInfo info{t};
#ifdef Py_TPFLAGS_MANAGED_DICT
    const bool has_dict = t->tp_dictoffset != 0 || (t->tp_flags & Py_TPFLAGS_MANAGED_DICT);
#else
    const bool has_dict = t->tp_dictoffset != 0;
#endif
    info.dict_only = t->tp_getattro == PyObject_GenericGetAttr && has_dict;
    for (int i = 0; info.dict_only && i < field_count; ++i) {
        // A data descriptor (a property, a __slots__ member) wins over the instance dict.
        if (PyObject* a = _PyType_Lookup(t, shape().key(i))) {
            if (Py_TYPE(a)->tp_descr_set) info.dict_only = false;
            info.on_type |= std::uint16_t(1u << i);
        }
    }
    // The version tag changes when the type (or a base) is modified: the entry is then stale.
    if (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) {
        info.version = t->tp_version_tag;
        last = info;
    }
    return info;
}

class Reader {
public:
    explicit Reader(PyObject* obj) : obj_(obj), shape_(shape()), is_dict_(PyDict_Check(obj))
    {
        if (is_dict_) return;
        const TypeInfo t = type_info(Py_TYPE(obj));
        if (!t.dict_only) return;
        PyObject* d = PyObject_GenericGetDict(obj, nullptr);
        if (!d) {
            PyErr_Clear();
            return;
        }
        walked_ = walk(d);
        Py_DECREF(d);
        on_type_ = t.on_type;
    }
    ~Reader()
    {
        for (PyObject* v : values_) Py_XDECREF(v);
    }
    Reader(const Reader&) = delete;
    Reader& operator=(const Reader&) = delete;

    // The field, or null when the chunk lacks it.
    Ref get(Field f)
    {
        const std::uint16_t bit = std::uint16_t(1u << f);
        if (walked_ && ((found_ & bit) || !(on_type_ & bit))) [[likely]]
            return Ref(std::exchange(values_[f], nullptr));
        return lookup(f);
    }

private:
    [[gnu::noinline]] Ref lookup(Field f)
    {
        PyObject* name = shape_.key(f);
        if (is_dict_) {
            PyObject* v = PyDict_GetItemWithError(obj_, name);
            if (!v && PyErr_Occurred()) {
                PyErr_Clear();
                throw BadRecord(fmt::format("reading chunk['{}'] raised", shape_.name(f)));
            }
            Py_XINCREF(v);
            return Ref(v);
        }
        PyObject* v = nullptr;
        if (lookup_attr(obj_, name, &v) < 0) {  // absent is fine; raising costs the record
            PyErr_Clear();
            throw BadRecord(fmt::format("reading chunk.{} raised", shape_.name(f)));
        }
        return Ref(v);
    }

    // Takes the fields from the instance dict, each with its own reference (checking a flag
    // can run Python code that changes the dict). False, with nothing taken, when a key is
    // not an exact str: getattr then decides.
    bool walk(PyObject* d)
    {
        PyObject *key, *value;
        Py_ssize_t pos = 0;
        while (PyDict_Next(d, &pos, &key, &value)) {
            if (!PyUnicode_CheckExact(key)) [[unlikely]] {
                for (PyObject*& v : values_) Py_CLEAR(v);
                found_ = 0;
                return false;
            }
            if (const int i = shape_.find(key); i >= 0) {
                Py_INCREF(value);
                Py_XSETREF(values_[i], value);
                found_ |= std::uint16_t(1u << i);
            }
        }
        return true;
    }

    PyObject* obj_;
    const DictShape<field_count>& shape_;
    bool is_dict_;
    bool walked_ = false;
    std::uint16_t found_ = 0, on_type_ = 0;
    PyObject* values_[field_count] = {};
};

std::uint64_t to_u64(PyObject* o, std::string_view where)
{
    if (PyLong_CheckExact(o)) {
        const unsigned long long v = PyLong_AsUnsignedLongLong(o);
        if (!(v == static_cast<unsigned long long>(-1) && PyErr_Occurred())) return v;
        PyErr_Clear();
        throw BadRecord(fmt::format("{} must be a non-negative 64-bit int", where));
    }
    if (PyBool_Check(o)) throw BadRecord(fmt::format("{} must be an int, got bool", where));
    PyObject* i = PyNumber_Index(o);
    if (!i) {
        PyErr_Clear();
        throw BadRecord(fmt::format("{} must be an int, got {}", where, Py_TYPE(o)->tp_name));
    }
    const unsigned long long v = PyLong_AsUnsignedLongLong(i);
    Py_DECREF(i);
    if (v == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
        PyErr_Clear();
        throw BadRecord(fmt::format("{} must be a non-negative 64-bit int", where));
    }
    return v;
}

// A str borrowed as UTF-8 (cached in the str object), or copied into `store` when it holds
// lone surrogates (the writer then replaces them and counts the record as sanitized).
std::string_view borrow_text(PyObject* o, std::string& store, std::string_view where)
{
    if (!PyUnicode_Check(o))
        throw BadRecord(fmt::format("{} must be a str, got {}", where, Py_TYPE(o)->tp_name));
    Py_ssize_t n = 0;
    if (const char* s = PyUnicode_AsUTF8AndSize(o, &n)) return {s, std::size_t(n)};
    PyErr_Clear();
    store = to_string(o, where, std::size_t(-1));
    return store;
}

bool truthy(const Ref& o)
{
    PyObject* p = o.get();
    if (!p || p == Py_False || p == Py_None) return false;
    if (p == Py_True) return true;
    const int t = PyObject_IsTrue(p);
    if (t < 0) {
        PyErr_Clear();
        throw BadRecord("a flag of the chunk has no truth value");
    }
    return t == 1;
}

bool given(const Ref& o) { return o && o.get() != Py_None; }

std::uint32_t token_id(PyObject* o)
{
    const std::uint64_t id = to_u64(o, "token_ids_diff[]");
    if (id > 0x7fffffffu) throw BadRecord("a token id does not fit in 31 bits");
    return static_cast<std::uint32_t>(id);
}

py::object owned(Ref&& r) { return py::reinterpret_steal<py::object>(r.release()); }

}  // namespace

void read_chunk(PyObject* obj, ReadChunk& r)
{
    OutputChunk& c = r.chunk;
    Reader in(obj);
    const Ref rid = in.get(f_request_id);
    if (!given(rid)) throw BadRecord("chunk without a request_id");
    c.request_id = to_u64(rid.get(), "request_id");
    if (const Ref v = in.get(f_output_index); given(v)) {
        const std::uint64_t i = to_u64(v.get(), "output_index");
        if (i > 0xffffffffu) throw BadRecord("output_index out of range");
        c.output_index = static_cast<std::uint32_t>(i);
    }
    if (Ref v = in.get(f_text_diff); given(v)) {
        c.text_diff = borrow_text(v.get(), r.text_diff_store, "text_diff");
        r.keep_text_diff = owned(std::move(v));
    }
    if (Ref v = in.get(f_text); given(v)) {
        c.text = borrow_text(v.get(), r.text_store, "text");
        r.keep_text = owned(std::move(v));
    }
    if (const Ref v = in.get(f_token_ids_diff); given(v)) {
        const Ref seq(PySequence_Fast(v.get(), "token_ids_diff must be a sequence of ints"));
        if (!seq) {
            PyErr_Clear();
            throw BadRecord("token_ids_diff must be a sequence of ints");
        }
        const std::size_t n = std::size_t(PySequence_Fast_GET_SIZE(seq.get()));
        PyObject** items = PySequence_Fast_ITEMS(seq.get());
        std::int32_t* ids = r.ids_inline.data();
        if (n > r.ids_inline.size()) {
            r.ids_heap.resize(n);
            ids = r.ids_heap.data();
        }
        for (std::size_t i = 0; i < n; ++i) ids[i] = static_cast<std::int32_t>(token_id(items[i]));
        c.token_ids_diff = std::span<const std::int32_t>(ids, n);
    }
    c.is_final = truthy(in.get(f_is_final));
    c.token_data_follows = truthy(in.get(f_token_data_follows));
    c.aborted = truthy(in.get(f_aborted));
    c.streaming = truthy(in.get(f_streaming));
    if (const Ref v = in.get(f_disagg_request_id); given(v))
        c.disagg_request_id = to_u64(v.get(), "disagg_request_id");
}

PyObject* verdict_text(PyObject* obj) noexcept
{
    // One lookup, not Reader's walk: this is also the whole read of a hook that records nothing.
    PyObject* name = nullptr;
    try {
        name = shape().key(f_text_diff);
    } catch (const std::exception&) {
        return nullptr;  // out of memory (error set)
    }
    PyObject* v = nullptr;
    if (PyDict_Check(obj)) {
        v = PyDict_GetItemWithError(obj, name);
        Py_XINCREF(v);
    } else if (lookup_attr(obj, name, &v) < 0) {
        v = nullptr;
    }
    if (v) return v;  // None too
    PyErr_Clear();
    return PyUnicode_FromStringAndSize("", 0);
}

}  // namespace jsonlw::python
