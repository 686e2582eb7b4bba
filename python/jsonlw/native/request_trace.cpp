// jsonlw._native.RequestTraceWriter: the C++ RequestTraceWriter, fed with request and
// response lines as dicts of their fields (requests-/responses-<pid>.jsonl,
// tensorrt_llm/serve/request_trace.py). Read on the caller's
// thread with the GIL held; redaction, session sanitizing, body validation and timestamps
// happen when the writer serializes (I/O thread, no GIL). A dict that cannot be read is
// queued marked malformed: dropped, counted (dropped.malformed) and logged by the writer.
#include "operator_options.hpp"
#include "writer_box.hpp"

#include <jsonlw/request_trace_writer.hpp>

#include <fmt/format.h>

#include <cmath>

namespace jsonlw::python {
namespace {

using Box = WriterBox<RequestTraceWriter>;

// Largest body kept (bytes): a bigger one makes the line malformed.
constexpr std::size_t max_body_bytes = std::size_t{64} << 20;

// str, bytes (UTF-8, decoded by the serializer: invalid bytes are replaced and counted), or a
// list of bytes frames joined before decoding (a character split across reads stays whole).
std::string body_text(PyObject* o, std::string_view where)
{
    if (PyUnicode_Check(o)) return to_string(o, where, max_body_bytes);
    if (PyBytes_Check(o) || PyByteArray_Check(o)) {
        const char* p = PyBytes_Check(o) ? PyBytes_AS_STRING(o) : PyByteArray_AS_STRING(o);
        const std::size_t n = std::size_t(PyBytes_Check(o) ? PyBytes_GET_SIZE(o) : PyByteArray_GET_SIZE(o));
        if (n > max_body_bytes) throw BadRecord(fmt::format("{} is longer than {} bytes", where, max_body_bytes));
        return std::string(p, n);
    }
    if (PyList_Check(o) || PyTuple_Check(o)) {
        std::string out;
        const Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
        PyObject** items = PySequence_Fast_ITEMS(o);
        for (Py_ssize_t i = 0; i < n; ++i) {
            if (!PyBytes_Check(items[i]))
                throw BadRecord(fmt::format("{} frames must be bytes, got {}", where, Py_TYPE(items[i])->tp_name));
            out.append(PyBytes_AS_STRING(items[i]), std::size_t(PyBytes_GET_SIZE(items[i])));
            if (out.size() > max_body_bytes)
                throw BadRecord(fmt::format("{} is longer than {} bytes", where, max_body_bytes));
        }
        return out;
    }
    throw BadRecord(fmt::format("{} must be str, bytes or a list of bytes, got {}", where, Py_TYPE(o)->tp_name));
}

std::string header_part(PyObject* o, std::string_view where)
{
    if (PyBytes_Check(o)) {  // ASGI headers are latin-1 bytes
        PyObject* s = PyUnicode_DecodeLatin1(PyBytes_AS_STRING(o), PyBytes_GET_SIZE(o), nullptr);
        if (!s) {
            PyErr_Clear();
            throw BadRecord(fmt::format("{} cannot be decoded", where));
        }
        std::string out = to_string(s, where, 64 * 1024);
        Py_DECREF(s);
        return out;
    }
    return to_string(o, where, 64 * 1024);
}

std::vector<TraceHeader> headers(PyObject* o)
{
    std::vector<TraceHeader> out;
    if (!o || o == Py_None) return out;
    if (PyDict_Check(o)) {
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        while (PyDict_Next(o, &pos, &k, &v))
            out.push_back({header_part(k, "header name"), header_part(v, "header value")});
        return out;
    }
    if (!PyList_Check(o) && !PyTuple_Check(o))
        throw BadRecord(fmt::format("headers must be a list of [name, value] pairs, got {}", Py_TYPE(o)->tp_name));
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
    if (n > 10000) throw BadRecord("more than 10000 headers");
    PyObject** items = PySequence_Fast_ITEMS(o);
    for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject* pair = items[i];
        if ((!PyList_Check(pair) && !PyTuple_Check(pair)) || PySequence_Fast_GET_SIZE(pair) != 2)
            throw BadRecord("headers must be a list of [name, value] pairs");
        PyObject** nv = PySequence_Fast_ITEMS(pair);
        out.push_back({header_part(nv[0], "header name"), header_part(nv[1], "header value")});
    }
    return out;
}

WallClock::time_point wall_time(PyObject* o, std::string_view where)
{
    if (!o || o == Py_None) return {};
    const double s = to_number(o, where);
    if (!std::isfinite(s) || s <= 0) throw BadRecord(fmt::format("{} must be a positive finite time", where));
    return WallClock::time_point(std::chrono::duration_cast<WallClock::duration>(std::chrono::duration<double>(s)));
}

std::optional<std::int64_t> opt_int(PyObject* d, const char* key)
{
    PyObject* v = item(d, key, "");
    if (!v || v == Py_None) return std::nullopt;
    return to_int(v, key);
}

std::optional<std::string> opt_str(PyObject* d, const char* key)
{
    PyObject* v = item(d, key, "");
    if (!v || v == Py_None) return std::nullopt;
    return to_string(v, key, 64 * 1024);
}

// What a request and a response trace share: a dict of str keys, "trace_id" and "session".
template <class Trace>
Trace read_trace_common(PyObject* d, const std::string& what)
{
    if (!is_dict(d)) throw BadRecord(what + " must be a dict");
    check_str_keys(d, what);
    Trace r;
    r.trace_id = to_string(require(d, "trace_id", ""), "trace_id", 256);
    if (auto s = opt_str(d, "session")) r.session = *s;
    return r;
}

RequestTrace read_request(PyObject* d)
{
    RequestTrace r = read_trace_common<RequestTrace>(d, "request trace");
    r.recorded_at = wall_time(item(d, "recorded_at", ""), "recorded_at");
    if (PyObject* v = item(d, "server_arrival_time", ""); v && v != Py_None)
        r.server_arrival_time = to_number(v, "server_arrival_time");
    r.route = to_string(require(d, "route", ""), "route", 64 * 1024);
    if (auto s = opt_str(d, "status")) {
        if (*s == "accepted") r.status = RequestTraceStatus::accepted;
        else if (*s == "rejected_400") r.status = RequestTraceStatus::rejected_400;
        else throw BadRecord("status must be 'accepted' or 'rejected_400', got '" + *s + "'");
    }
    r.headers = headers(item(d, "headers", ""));
    if (PyObject* b = item(d, "body", ""); b && b != Py_None) r.body = body_text(b, "body");
    if (PyObject* v = item(d, "validation_errors", ""); v && v != Py_None) {
        if (!PyList_Check(v)) throw BadRecord("validation_errors must be a list");
        std::vector<TraceValidationError> errs;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v); ++i) {
            PyObject* e = PyList_GET_ITEM(v, i);
            if (!is_dict(e)) throw BadRecord("validation_errors entries must be dicts");
            TraceValidationError te;
            if (PyObject* loc = item(e, "loc", ""); loc && loc != Py_None) {
                if (!PyList_Check(loc) && !PyTuple_Check(loc)) throw BadRecord("loc must be a list");
                for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(loc); ++j) {
                    PyObject* l = PySequence_Fast_ITEMS(loc)[j];
                    py::str s = py::reinterpret_steal<py::str>(PyObject_Str(l));
                    if (!s) {
                        PyErr_Clear();
                        throw BadRecord("loc entries must be printable");
                    }
                    te.loc.push_back(to_string(s.ptr(), "loc", 4096));
                }
            }
            if (auto s = opt_str(e, "type")) te.type = *s;
            if (auto s = opt_str(e, "msg")) te.msg = *s;
            errs.push_back(std::move(te));
        }
        r.validation_errors = std::move(errs);
    }
    return r;
}

ResponseTrace read_response(PyObject* d)
{
    ResponseTrace r = read_trace_common<ResponseTrace>(d, "response trace");
    r.finished_at = wall_time(item(d, "finished_at", ""), "finished_at");
    if (auto s = opt_str(d, "status")) {
        if (*s == "completed") r.status = ResponseTraceStatus::completed;
        else if (*s == "client_disconnected") r.status = ResponseTraceStatus::client_disconnected;
        else if (*s == "error") r.status = ResponseTraceStatus::error;
        else if (*s == "unknown") r.status = ResponseTraceStatus::unknown;
        else throw BadRecord("unknown response status '" + *s + "'");
    }
    r.client_id = opt_int(d, "client_id");
    r.disagg_request_id = opt_int(d, "disagg_request_id");
    r.ctx_request_id = opt_int(d, "ctx_request_id");
    if (auto v = opt_int(d, "http_status")) r.http_status = int(*v);
    if (PyObject* t = item(d, "termination", ""); t && t != Py_None) {
        if (!is_dict(t)) throw BadRecord("termination must be a dict");
        TraceTermination tt;
        tt.cause = to_string(require(t, "cause", "termination"), "termination.cause", 4096);
        tt.detail = opt_str(t, "detail");
        r.termination = std::move(tt);
    }
    if (auto k = opt_str(d, "response_kind")) {
        if (*k == "json") r.response.kind = ResponseKind::json;
        else if (*k == "text") r.response.kind = ResponseKind::text;
        else if (*k == "sse_text") r.response.kind = ResponseKind::sse_text;
        else throw BadRecord("response_kind must be 'json', 'text' or 'sse_text', got '" + *k + "'");
    }
    if (PyObject* b = item(d, "body", ""); b && b != Py_None) r.response.body = body_text(b, "body");
    r.response_status = opt_str(d, "response_status");
    r.incomplete_reason = opt_str(d, "incomplete_reason");
    r.error_code = opt_str(d, "error_code");
    // Its request's traceparent value: an invalid one is left out (its request line counted it).
    if (auto s = opt_str(d, "traceparent")) r.trace_context = TraceContext::parse_traceparent(*s);
    return r;
}

template <class T, class Read>
T read_or_mark(PyObject* o, Read read)
{
    try {
        return read(o);
    } catch (const std::exception& e) {
        if (PyErr_Occurred()) PyErr_Clear();
        T bad;
        bad.malformed = e.what();
        return bad;
    }
}

}  // namespace

void register_request_trace(py::module_& m)
{
    py::class_<Box, std::shared_ptr<Box>> cls(m, "RequestTraceWriter",
        "jsonlw::RequestTraceWriter (the C++ writer): request and response lines.");
    cls.def(py::init([](std::shared_ptr<IoContext> io, std::string directory, py::object logger,
                        bool durable, std::optional<std::string> writer_suffix,
                        std::string capture, std::string format, std::string chain,
                        std::optional<std::string> chain_key) {
                auto logs = std::make_shared<LogQueue>();
                auto box = std::make_shared<Box>(io, logs, logger);
                RequestTraceOptions o;
                o.directory = directory;
                o.durable = durable;
                o.writer_suffix = writer_suffix;
                o.log = logs->sink();
                o.capture = capture_arg(capture);
                apply_format_and_chain(o, format, chain, chain_key);
                try {
                    box->set(std::make_shared<RequestTraceWriter>(io->executor(), std::move(o)));
                } catch (const std::invalid_argument& e) {
                    throw py::value_error(e.what());
                }
                return box;
            }),
            py::arg("io"), py::arg("directory"), py::arg("logger"), py::arg("durable") = false,
            py::arg("writer_suffix") = py::none(), py::arg("capture") = "full",
            py::arg("format") = "jsonl", py::arg("chain") = "none",
            py::arg("chain_key") = py::none());
    cls.def("record_request", [](Box& b, py::handle d) {
        SubmitResult r = b.writer().record_request(
            read_or_mark<RequestTrace>(d.ptr(), read_request));
        b.emit_logs();
        return submit_result(r);
    });
    cls.def("record_response", [](Box& b, py::handle d) {
        SubmitResult r = b.writer().record_response(
            read_or_mark<ResponseTrace>(d.ptr(), read_response));
        b.emit_logs();
        return submit_result(r);
    });
    cls.def_property_readonly("generation", [](const Box& b) { return b.writer().generation(); });
    cls.def_property_readonly("sidecar_path",
                              [](const Box& b) { return b.writer().sidecar_path().string(); });
    cls.def_property_readonly("writer_suffix",
                              [](const Box& b) { return b.writer().writer_suffix(); });
    cls.def_property_readonly("invalid_traceparents",
                              [](const Box& b) { return b.writer().invalid_traceparents(); });
    bind_writer_common<Box>(cls);

    m.def("new_trace_id", &new_trace_id);
    m.def("sanitize_session", &sanitize_session);
    m.def("is_credential_header", &is_credential_header);
}

}  // namespace jsonlw::python
