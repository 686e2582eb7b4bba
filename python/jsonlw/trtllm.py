"""Drop-ins for TensorRT-LLM's serving writers (PerfMetricsJsonlWriter, RawOutputDump,
RequestTraceWriter), with the C++ writers behind them:

    from jsonlw.trtllm import PerfMetricsJsonlWriter      # tensorrt_llm.serve.perf_metrics
    --post_processor_hook jsonlw.trtllm.RawOutputDump     # tensorrt_llm.executor.raw_output_hook
    from jsonlw.trtllm import RequestTraceWriter          # tensorrt_llm.serve.request_trace

Same names, constructors, file names, record shapes and log messages; submit() never blocks
and never raises for a bad record (it is dropped and counted as malformed).
"""

import logging
import os
import time
import weakref

from . import _native, _runtime
from ._forward import forwarded
from ._native import SubmitResult
from ._writer import WriterBase

__all__ = ["PerfMetricsJsonlWriter", "RawOutputDump", "RequestTraceWriter", "HookAction",
           "SubmitResult", "perf_metrics_line"]

logger = logging.getLogger("jsonlw.trtllm")

RAW_OUTPUT_DIR_ENV = "TRTLLM_RAW_OUTPUT_DIR"
REQUEST_TRACE_DIR_ENV = "TRTLLM_REQUEST_TRACE_DIR"


def _directory(value, what):
    if value is None:
        return ""
    if isinstance(value, bytes) or not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{what} must be a str or os.PathLike or None, got {type(value).__name__}")
    return os.fspath(value)


def _io(io_context):
    if io_context is None:
        return _runtime.default_io_context()
    if not isinstance(io_context, _native.IoContext):
        raise TypeError(f"io_context must be a jsonlw.IoContext, got {type(io_context).__name__}")
    return io_context


def _operator_options(format, chain, chain_key):
    """The operator features' keywords (docs/python.md, "Operator features"), checked for type;
    the native writer checks their values (ValueError)."""
    if not isinstance(format, str):
        raise TypeError("format must be a str ('jsonl' or 'otlp')")
    if chain is not None and not isinstance(chain, str):
        raise TypeError("chain must be None or a str ('sha256' or 'hmac-sha256')")
    if chain_key is not None and not isinstance(chain_key, (str, os.PathLike)):
        raise TypeError("chain_key must be None or a path")
    return dict(format=format, chain=chain or "none",
                chain_key=None if chain_key is None else os.fspath(chain_key))


def _capture(capture):
    if not isinstance(capture, str):
        raise TypeError("capture must be a str ('full' or 'metadata')")
    return capture


def perf_metrics_line(record):
    """The line (bytes, no newline) PerfMetricsJsonlWriter writes for `record`; ValueError
    for a record it drops as malformed."""
    return _native.perf_metrics_line(record)


# --- PerfMetricsJsonlWriter ---------------------------------------------------------------

class PerfMetricsJsonlWriter(WriterBase):
    """tensorrt_llm.serve.perf_metrics.PerfMetricsJsonlWriter on jsonlw::PerfMetricsWriter.

    `output_dir` None or empty: inert. File <output_dir>/perf_metrics-<kind>-<hostname>-
    <pid>-<YYYYMMDDTHHMMSSZ>.jsonl (the time taken at start()); queue 1024, batches of 64,
    5 s shutdown. submit(record) takes the internal record the middleware builds
    (PerfMetricsMiddleware) and the C++ writer applies the _jsonl_record rules; any thread,
    never blocks, returns a SubmitResult.
    """

    QUEUE_SIZE = 1024
    BATCH_SIZE = 64
    SHUTDOWN_TIMEOUT_SECONDS = 5.0

    dropped_records = property(_native.live_count_getter("_live_dropped_records"), doc=(
        "Records dropped for any reason but a submit after close (queue full, malformed, "
        "write error, shutdown), as TensorRT-LLM's counter: an int read live, one C call."))

    def __init__(self, output_dir, kind="server", *, io_context=None, durability="none",
                 format="jsonl", chain=None, chain_key=None):
        if not isinstance(kind, str):
            raise TypeError(f"kind must be a str, got {type(kind).__name__}")
        if not isinstance(durability, str):
            raise TypeError("durability must be a str")
        self._output_dir = _directory(output_dir, "output_dir")
        native = _native.PerfMetricsWriter(_io(io_context), self._output_dir, kind,
                                           logger, durability,
                                           **_operator_options(format, chain, chain_key))
        super().__init__(native)
        self.submit = native.fast_submit()  # a builtin: no argument dispatch per record
        self._live_dropped_records = native.dropped_records_source()
        self._kind = kind

    @property
    def kind(self):
        return self._kind

    @property
    def output_dir(self):
        return self._output_dir or None

    def _describe(self):
        return f"PerfMetricsJsonlWriter({self._output_dir!r}, {self._kind!r})"


# --- RawOutputDump ------------------------------------------------------------------------

class HookAction(tuple):
    """The pass-through verdict when tensorrt_llm is not importable: emit `text` unchanged
    (TensorRT-LLM's PostProcessorHookAction.emit). A (kind, text, reason) tuple, so the hook
    builds it in C++ without a Python call."""

    __slots__ = ()

    def __new__(cls, kind, text="", reason=None):
        return tuple.__new__(cls, (kind, text, reason))

    @classmethod
    def emit(cls, text):
        return tuple.__new__(cls, ("emit", text, None))

    kind = property(lambda self: self[0])
    text = property(lambda self: self[1])
    reason = property(lambda self: self[2])

    def __repr__(self):
        return f"HookAction.emit({self.text!r})" if self.kind == "emit" else f"HookAction({self.kind!r})"


def _emit_factory():
    """TensorRT-LLM's own verdict constructor when it is importable, else HookAction.emit."""
    try:
        from tensorrt_llm.executor.postprocessor_hook import PostProcessorHookAction
        emit = getattr(PostProcessorHookAction, "emit")
        if callable(emit):
            return emit
    except Exception:  # noqa: BLE001 - any import failure means "not there"
        pass
    return HookAction.emit


_warned_disabled = False


class RawOutputDump(_native.RawOutputHook):
    """tensorrt_llm.executor.raw_output_hook.RawOutputDump on jsonlw::RawOutputWriter.

    Records when TRTLLM_RAW_OUTPUT_DIR is set (read at construction; `output_dir` overrides
    it): one line per finished output in <dir>/<YYYY-MM-DDTHH>/raw-<pid>.jsonl. Calling the
    hook with a chunk (PostProcessorHookChunk, or a dict of its fields) always returns the
    pass-through verdict emit(chunk.text_diff) and never raises; the record is queued to the
    C++ writer (no file I/O in the caller's thread). on_request_end(request_id, reason) writes
    what a request that ended without final chunks had generated, as a partial record.
    """

    def __init__(self, output_dir=None, *, max_pending=4096, io_context=None, capture="full",
                 format="jsonl", chain=None, chain_key=None):
        global _warned_disabled
        if output_dir is None:
            output_dir = os.environ.get(RAW_OUTPUT_DIR_ENV, "")
        self._output_dir = _directory(output_dir, "output_dir")
        if isinstance(max_pending, bool) or not isinstance(max_pending, int):
            raise TypeError("max_pending must be an int")
        if max_pending < 1:
            raise ValueError("max_pending must be at least 1")
        self._emit = _emit_factory()
        quiet = logging.getLogger("jsonlw.trtllm._repeated_warning")
        quiet.propagate = False
        quiet.addHandler(logging.NullHandler())
        log = logger if (self._output_dir or not _warned_disabled) else quiet
        if not self._output_dir:
            _warned_disabled = True  # the C++ writer warns once per process that builds it
        self._native = _native.RawOutputWriter(_io(io_context), self._output_dir, log, max_pending,
                                               capture=_capture(capture),
                                               **_operator_options(format, chain, chain_key))
        self._live_dropped = self._native.dropped_source()
        self._inherited = False
        self._closed = False
        self._close_report = None
        self._record = bool(self._output_dir)
        # Calling the hook (and on_chunk) is RawOutputHook's C call: no Python frame per chunk.
        self._native.bind_hook(self, self._emit,
                               HookAction if self._emit == HookAction.emit else None, self._record)
        if self._output_dir:
            _runtime.track(self)
            self._native.start_async(lambda _: None)  # mkdir on the io_context thread

    # The hook: __call__(chunk) and on_chunk(chunk) are RawOutputHook's (jsonlw._native).

    def on_request_end(self, request_id, reason="ended"):
        if not self._output_dir:
            return
        try:
            self._native.on_request_end(int(request_id), str(reason or ""))
        except BaseException:  # noqa: BLE001
            pass

    def end_all(self, reason="ended"):
        if self._output_dir:
            try:
                self._native.end_all(str(reason))
            except BaseException:  # noqa: BLE001
                pass

    # Lifecycle and state.
    def flush(self, timeout=None):
        return WriterBase.flush(self, timeout)

    def close(self, timeout=None):
        return WriterBase.close(self, timeout)

    _close_blocking = WriterBase._close_blocking
    stats = WriterBase.stats

    def counters(self):
        """The hook side: pending, finished, partial, evicted, released_empty, not_recorded,
        hook_failures, bad_chunks, ..."""
        return self._native.counters()

    dropped = property(_native.live_count_getter("_live_dropped"), doc=(
        "Records (and chunks) lost: hook failures, unreadable chunks, and the writer's drops; "
        "an int read live, one C call (TensorRT-LLM's `_dropped`)."))
    _dropped = dropped

    recording = forwarded("_native.recording")
    pending_outputs = forwarded("_native.pending_outputs")
    max_pending = forwarded("_native.max_pending")

    @property
    def output_dir(self):
        return self._output_dir or None

    def _describe(self):
        return f"RawOutputDump({self._output_dir!r})"


_native.inherit_hook_vectorcall(RawOutputDump)


# --- RequestTraceWriter -------------------------------------------------------------------

_INTERNAL_HOPS = ("context_only", "generation_only")


def _request_type(disaggregated_params):
    if disaggregated_params is None:
        return None
    if isinstance(disaggregated_params, dict):
        return disaggregated_params.get("request_type")
    return getattr(disaggregated_params, "request_type", None)


class RequestTraceWriter(WriterBase):
    """tensorrt_llm.serve.request_trace.RequestTraceWriter on jsonlw::RequestTraceWriter.

    Enabled by `output_dir` or TRTLLM_REQUEST_TRACE_DIR (read at construction). Files
    <dir>/<YYYY-MM-DDTHH>/requests-<pid>.jsonl and responses-<pid>.jsonl, the hour from each
    line's own timestamp; queue 1024, batches of 32, 5 s shutdown. Credentials redacted and
    sessions sanitized when the line is serialized (C++ I/O thread). durable=True: fsync per
    batch, torn-line isolation and the accounting sidecar <dir>/_writer/<generation>.json.
    """

    dropped_records = property(_native.live_count_getter("_live_dropped_records"), doc=(
        "Records dropped for any reason but a submit after close, as TensorRT-LLM's counter: "
        "an int read live, one C call."))

    def __init__(self, output_dir=None, *, durable=False, writer_suffix=None, io_context=None,
                 capture="full", format="jsonl", chain=None, chain_key=None):
        if output_dir is None:
            output_dir = os.environ.get(REQUEST_TRACE_DIR_ENV, "")
        self._output_dir = _directory(output_dir, "output_dir")
        if not isinstance(durable, bool):
            raise TypeError("durable must be a bool")
        if writer_suffix is not None and not isinstance(writer_suffix, str):
            raise TypeError("writer_suffix must be a str or None")
        native = _native.RequestTraceWriter(_io(io_context), self._output_dir, logger,
                                            durable, writer_suffix, capture=_capture(capture),
                                            **_operator_options(format, chain, chain_key))
        super().__init__(native)
        self.submit = None
        self._live_dropped_records = native.dropped_records_source()

    @property
    def enabled_dir(self):
        return self._output_dir or None

    @staticmethod
    def should_trace(disaggregated_params=None, request_state=None):
        """False for the disaggregated server's internal hops (request_type context_only or
        generation_only) and for a request already traced (re-entry: `request_state` holds a
        handle)."""
        if _request_type(disaggregated_params) in _INTERNAL_HOPS:
            return False
        if request_state is not None and getattr(request_state, "trtllm_request_trace", None) is not None:
            return False
        return True

    def record_request(self, *, route, headers=(), body=b"", session="", status="accepted",
                       server_arrival_time=None, validation_errors=None, trace_id=None,
                       recorded_at=None):
        """Queues the request line; returns its trace_id ("tr_" + 32 hex), or None when the
        writer is inert. Never raises for bad values (the line is dropped as malformed)."""
        if not self._output_dir:
            return None
        tid = trace_id if trace_id is not None else _native.new_trace_id()
        self._native.record_request({
            "trace_id": tid, "session": session, "recorded_at": recorded_at,
            "server_arrival_time": server_arrival_time, "route": route, "status": status,
            "headers": headers, "body": body, "validation_errors": validation_errors})
        return tid

    def record_response(self, trace_id, *, session="", status="completed", body="",
                        response_kind="json", client_id=None, disagg_request_id=None,
                        ctx_request_id=None, http_status=None, termination=None,
                        response_status=None, incomplete_reason=None, error_code=None,
                        finished_at=None, traceparent=None):
        """Queues the response line; returns the SubmitResult. `traceparent`: the request's
        header value, written as the line's "traceparent" key (left out when invalid)."""
        if not self._output_dir:
            return SubmitResult.disabled
        return self._native.record_response({
            "trace_id": trace_id, "session": session, "status": status, "body": body,
            "response_kind": response_kind, "client_id": client_id,
            "disagg_request_id": disagg_request_id, "ctx_request_id": ctx_request_id,
            "http_status": http_status, "termination": termination,
            "response_status": response_status, "incomplete_reason": incomplete_reason,
            "error_code": error_code, "finished_at": finished_at, "traceparent": traceparent})

    def begin(self, *, route, headers=(), body=b"", session="", request_state=None,
              disaggregated_params=None, **fields):
        """The request hook: records the request and returns a TraceHandle (stored on
        `request_state.trtllm_request_trace`), or None when not traced (inert, an internal
        disaggregated hop, or re-entry)."""
        if not self._output_dir or not self.should_trace(disaggregated_params, request_state):
            return None
        tid = self.record_request(route=route, headers=headers, body=body, session=session,
                                  **fields)
        handle = TraceHandle(self, tid, session, _traceparent_of(headers))
        if request_state is not None:
            try:
                request_state.trtllm_request_trace = handle
            except Exception:  # noqa: BLE001
                pass
        return handle

    generation = forwarded("_native.generation")
    sidecar_path = forwarded("_native.sidecar_path")
    writer_suffix = forwarded("_native.writer_suffix")
    invalid_traceparents = forwarded("_native.invalid_traceparents", doc=(
        "Request lines written without the traceparent header they sent (invalid or "
        "repeated), counted when written (after flush() or close(): all)."))

    def _describe(self):
        return f"RequestTraceWriter({self._output_dir!r})"


def _traceparent_of(headers):
    """The value of the request's one traceparent header (its name in any case), else None:
    what its response line carries, as the request line reads it (docs/writers.md, "Trace
    context on records"; a repeated header is refused there, so none here)."""
    try:
        values = [v for n, v in headers
                  if (n.decode("latin-1") if isinstance(n, bytes) else str(n)).lower() == "traceparent"]
    except (TypeError, ValueError):
        return None
    if len(values) != 1:
        return None
    v = values[0]
    return v.decode("latin-1") if isinstance(v, bytes) else v


class TraceHandle:
    """One traced request: its response is written once (the first finish() wins)."""

    def __init__(self, writer, trace_id, session, traceparent=None):
        self._writer = weakref.ref(writer)
        self.trace_id = trace_id
        self.session = session
        self.traceparent = traceparent  # the request's, for its response line
        self.response_written = False

    def finish(self, **fields):
        if self.response_written:
            return None
        self.response_written = True
        w = self._writer()
        if w is None:
            return None
        fields.setdefault("traceparent", self.traceparent)
        return w.record_response(self.trace_id, session=self.session, **fields)

    def wrap_stream(self, stream, **fields):
        """Wraps an SSE async iterator of str/bytes: the whole stream is recorded as
        sse_text with status completed, client_disconnected (GeneratorExit, cancellation)
        or error; a stream never iterated is recorded as client_disconnected with
        termination {cause: "not_started"} when it is collected."""
        handle = self
        frames = []

        class _Stream:
            def __init__(self):
                self._started = False
                self._agen = self._run()

            async def _run(self):
                try:
                    async for frame in stream:
                        frames.append(frame.encode() if isinstance(frame, str) else bytes(frame))
                        yield frame
                except (GeneratorExit, _cancelled()):
                    handle.finish(status="client_disconnected", response_kind="sse_text",
                                  body=frames, termination={"cause": "cancelled", "detail": None},
                                  **fields)
                    raise
                except Exception as e:  # noqa: BLE001
                    handle.finish(status="error", response_kind="sse_text", body=frames,
                                  termination={"cause": "exception",
                                               "detail": f"{type(e).__name__}: {e}"}, **fields)
                    raise
                else:
                    handle.finish(status="completed", response_kind="sse_text", body=frames,
                                  **fields)

            def __aiter__(self):
                return self

            async def __anext__(self):
                self._started = True
                return await self._agen.__anext__()

            async def aclose(self):
                await self._agen.aclose()

            def __del__(self):
                if not self._started and not handle.response_written:
                    handle.finish(status="client_disconnected", response_kind="sse_text",
                                  body="", termination={"cause": "not_started", "detail": None},
                                  **fields)

        return _Stream()


def _cancelled():
    import asyncio
    return asyncio.CancelledError
