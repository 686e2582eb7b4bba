"""A port, for the tests, of the logic of TensorRT-LLM's perf-metrics helpers: how a worker
builds its record, how the disaggregated server rebuilds worker records from the metrics
headers and combines them, what the middleware submits, and what the writer writes for it.
Written from the behaviour of tensorrt_llm/serve/perf_metrics.py (build_request_metrics_record,
build_metrics_headers, build_metrics_record_from_headers, combine_disagg_metrics,
PerfMetricsMiddleware, _jsonl_perf_metrics, _jsonl_worker_metrics, _jsonl_record) and
tensorrt_llm/serve/openai_disagg_server.py (RawRequestResponseHooks.on_resp_done); see
docs/writers.md, "Perf metrics". Not their code: the same steps, in the same order,
so the dicts come out with the same keys in the same order.

trtllm_line(submitted) is the line TensorRT-LLM's writer writes for a submitted record
(compact json.dumps, NaN rejected). Where the writer version read differs from the newer rule
of TensorRT-LLM's unit tests that jsonlw follows (transfer stamps are kept without
kv_cache_size and stripped only when None or 0), the port follows the newer rule; the records
the tests build never fall between the two (a transfer without kv_cache_size only comes from
headers, which the version read never carried).
"""

import json
import math

SERVER_TIMING = "Server-Timing"
START_END_TIME = "X-TRTLLM-Start-End-Time"
STEP_METRICS = "X-TRTLLM-Step-Metrics"
CTX_CHUNK_METRICS = "X-TRTLLM-Ctx-Chunk-Metrics"

_TIMING_FIELDS = ("arrival_time", "first_scheduled_time", "first_token_time", "last_token_time",
                  "kv_cache_transfer_start", "kv_cache_transfer_end")
_KV_FIELDS = ("num_total_allocated_blocks", "num_new_allocated_blocks", "num_reused_blocks",
              "num_missed_blocks", "kv_cache_hit_rate")
_SPEC_FIELDS = ("acceptance_rate", "total_accepted_draft_tokens", "total_draft_tokens")


# --- the worker: its own record ----------------------------------------------------------

def _seconds(value, offset=0.0):
    try:
        s = float(value.total_seconds())
    except (AttributeError, TypeError, ValueError):
        return None
    return s + offset if s > 0 else None


def worker_record(result, raw_request=None, phase="server", offset=0.0):
    """build_request_metrics_record: `result` looks like a RequestOutput (outputs[0] with
    request_perf_metrics and disaggregated_params; request_id; time_breakdown_metrics)."""
    output = result.outputs[0]
    metrics = output.request_perf_metrics
    timing = metrics.timing_metrics
    t = {name: _seconds(getattr(timing, name), offset) for name in _TIMING_FIELDS}
    t["kv_cache_size"] = timing.kv_cache_size
    if raw_request is not None:
        for name in ("server_arrival_time", "server_first_token_time"):
            v = getattr(raw_request.state, name, None)
            t[name] = v + offset if v is not None else None
    phase_record = {
        "first_iter": metrics.first_iter,
        "last_iter": metrics.last_iter,
        "timing_metrics": t,
        "kv_cache_metrics": {n: getattr(metrics.kv_cache_metrics, n) for n in _KV_FIELDS},
    }
    spec = metrics.speculative_decoding
    if spec.total_draft_tokens > 0:
        phase_record["speculative_decoding"] = {n: getattr(spec, n) for n in _SPEC_FIELDS}
    if getattr(result, "time_breakdown_metrics", None) is not None:
        phase_record["time_breakdown_metrics"] = result.time_breakdown_metrics
    record = {"schema_version": 1, "request_id": str(getattr(result, "request_id", "")),
              "status": "complete", "phases": {phase: phase_record}}
    disagg = getattr(output, "disaggregated_params", None)
    if disagg:
        for name in ("ctx_request_id", "disagg_request_id"):
            v = getattr(disagg, name, None)
            if v is not None:
                record[name] = v
    return record


# --- the headers a worker answers with, and the record the disagg server rebuilds ----------

def _elapsed_ms(values, start, end=None):
    try:
        v = float(values[start])
        if end is not None:
            v = (float(values[end]) - v) * 1000
    except (KeyError, TypeError, ValueError):
        return None
    return v if v >= 0 and math.isfinite(v) else None


def metrics_headers(record):
    """build_metrics_headers (one record)."""
    values = {SERVER_TIMING: [], START_END_TIME: [], STEP_METRICS: [], CTX_CHUNK_METRICS: []}
    for phase, pr in record.get("phases", {}).items():
        timing = pr.get("timing_metrics", {})
        for name, field in (("start", "arrival_time"), ("end", "last_token_time")):
            ts = timing.get(field)
            if ts is not None:
                values[START_END_TIME].append(f"{phase}-{name};ts={float(ts):.9f}")
        ranges = ((("queue", "server_arrival_time", "ctx_dispatch_time"),
                   ("ttft", "server_arrival_time", "server_first_token_time"))
                  if phase == "disagg" else
                  (("queue", "arrival_time", "first_scheduled_time"),
                   ("ttft", "arrival_time", "first_token_time"),
                   ("e2e", "arrival_time", "last_token_time"),
                   ("kv_transfer", "kv_cache_transfer_start", "kv_cache_transfer_end")))
        for name, start, end in ranges:
            d = _elapsed_ms(timing, start, end)
            if d is not None:
                values[SERVER_TIMING].append(f"{phase}_{name};dur={d:.6f}")
        breakdown = pr.get("time_breakdown_metrics") or {}
        for header, key, label in ((STEP_METRICS, "step_metrics", "step"),
                                   (CTX_CHUNK_METRICS, "ctx_chunk_metrics", "ctx-chunk")):
            for index, m in enumerate(breakdown.get(key, [])):
                item = m.get("iter", index) if key == "step_metrics" else index
                for name, d in (("forward", _elapsed_ms(m, "forward_start_time", "forward_end_time")),
                                ("sample", _elapsed_ms(m, "sample_start_time", "sample_end_time")),
                                ("gpu-forward", _elapsed_ms(m, "gpu_forward_time")),
                                ("gpu-sample", _elapsed_ms(m, "gpu_sample_time"))):
                    if d is not None:
                        values[header].append(f"{phase}-{label}-{item}-{name};dur={d:.6f}")
        inherited = pr.get("metrics_headers") or {}
        for header in values:
            if inherited.get(header):
                values[header].append(inherited[header])
    return {h: ", ".join(items) for h, items in values.items() if items}


def record_from_headers(headers, phase, request_id=""):
    """build_metrics_record_from_headers: timing keys in the order they are found — the
    Start-End items as listed (start, then end), then first_scheduled / first_token /
    last_token from the Server-Timing durations, each only if not set yet."""
    kept = {}
    for h in (SERVER_TIMING, START_END_TIME, STEP_METRICS, CTX_CHUNK_METRICS):
        v = headers.get(h)
        if v:
            kept[h] = v.replace("server_", f"{phase}_").replace("server-", f"{phase}-")
    if not kept:
        return None
    timing = {}
    fields = {f"{phase}-start": "arrival_time", f"{phase}-end": "last_token_time"}
    for item in kept.get(START_END_TIME, "").split(","):
        name, sep, ts = item.strip().partition(";ts=")
        if sep and name in fields:
            try:
                timing[fields[name]] = float(ts)
            except ValueError:
                pass
    durations = {}
    prefix = f"{phase}_"
    for item in kept.get(SERVER_TIMING, "").split(","):
        name, sep, d = item.strip().partition(";dur=")
        if sep and name.startswith(prefix):
            try:
                durations[name[len(prefix):]] = float(d) / 1000
            except ValueError:
                pass
    arrival = timing.get("arrival_time")
    if arrival is not None:
        for name, field in (("queue", "first_scheduled_time"), ("ttft", "first_token_time"),
                            ("e2e", "last_token_time")):
            if name in durations:
                timing.setdefault(field, arrival + durations[name])
    phase_record = {"metrics_headers": kept}
    if timing:
        phase_record["timing_metrics"] = timing
    return {"schema_version": 1, "request_id": request_id, "status": "complete",
            "metrics_headers": kept, "phases": {phase: phase_record}}


def combine(request_id, disagg_phase, ctx_record, gen_record, disagg_request_id=None):
    """combine_disagg_metrics."""
    phases = {"disagg": disagg_phase}

    def add(name, record):
        pr = dict(next(iter(record.get("phases", {}).values()), {}))
        pr["request_id"] = record.get("request_id")
        if record.get("ctx_request_id") is not None:
            pr["ctx_request_id"] = record["ctx_request_id"]
        if record.get("metrics_headers"):
            pr["metrics_headers"] = record["metrics_headers"]
        phases[name] = pr

    if ctx_record:
        add("ctx", ctx_record)
    if gen_record:
        add("gen", gen_record)
    combined = {"schema_version": 1, "request_id": request_id, "status": "complete",
                "phases": phases}
    if disagg_request_id is not None:
        combined["disagg_request_id"] = disagg_request_id
    return combined


def disagg_phase(ctx_server, gen_server, arrival, ctx_dispatch, first_token, last_token):
    """RawRequestResponseHooks.on_resp_done's disagg phase (0 means "not seen": None)."""
    return {"ctx_server": ctx_server, "gen_server": gen_server,
            "timing_metrics": {"arrival_time": arrival, "last_token_time": last_token,
                               "server_arrival_time": arrival,
                               "ctx_dispatch_time": ctx_dispatch or None,
                               "server_first_token_time": first_token or None}}


def submitted(record, streaming=False):
    """What PerfMetricsMiddleware submits: the record plus streaming and the detail headers."""
    headers = metrics_headers(record)
    details = {n: v for n, v in headers.items()
               if n in (START_END_TIME, STEP_METRICS, CTX_CHUNK_METRICS)}
    return {**record, "streaming": streaming, "metrics_headers": details}


# --- the writer: _jsonl_record + json.dumps ------------------------------------------------

def _perf_metrics(pr):
    pm = {"timing_metrics": dict(pr.get("timing_metrics", {}))}
    for k in ("first_iter", "last_iter", "kv_cache_metrics", "speculative_decoding"):
        if k in pr:
            pm[k] = pr[k]
    t = dict(pm["timing_metrics"])
    if not t.get("kv_cache_size"):
        t.pop("kv_cache_size", None)
    for k in ("kv_cache_transfer_start", "kv_cache_transfer_end"):  # the newer rule (above)
        if not t.get(k):
            t.pop(k, None)
    pm["timing_metrics"] = t
    kv = dict(pm.get("kv_cache_metrics", {}))
    kv.pop("kv_cache_hit_rate", None)
    if kv:
        pm["kv_cache_metrics"] = kv
    return pm


def _worker_metrics(record, pr):
    rid = record["request_id"]
    try:
        rid = int(rid)
    except (TypeError, ValueError):
        pass
    out = {"request_id": rid, "perf_metrics": _perf_metrics(pr)}
    if record.get("ctx_request_id") is not None:
        out["ctx_request_id"] = record["ctx_request_id"]
    if pr.get("time_breakdown_metrics") is not None:
        out["time_breakdown_metrics"] = pr["time_breakdown_metrics"]
    return out


def jsonl_record(record):
    phases = record.get("phases", {})
    if "disagg" not in phases:
        out = {**_worker_metrics(record, phases["server"]),
               "status": record.get("status", "complete")}
        if record.get("disagg_request_id") is not None:
            out["disagg_request_id"] = record["disagg_request_id"]
        return out
    d = phases["disagg"]
    t = d["timing_metrics"]
    out = {"ctx_server": d["ctx_server"], "gen_server": d["gen_server"],
           "disagg_server_arrival_time": t["server_arrival_time"],
           "disagg_ctx_dispatch_time": t["ctx_dispatch_time"],
           "disagg_server_first_token_time": t["server_first_token_time"],
           "status": record.get("status", "complete")}
    for phase, field in (("ctx", "ctx_perf_metrics"), ("gen", "gen_perf_metrics")):
        pr = phases.get(phase)
        if pr:
            worker = {"request_id": pr.get("request_id", record["request_id"]),
                      "ctx_request_id": pr.get("ctx_request_id")}
            out[field] = _worker_metrics(worker, pr)
    if record.get("disagg_request_id") is not None:
        out["disagg_request_id"] = record["disagg_request_id"]
    return out


def trtllm_line(record):
    """The bytes TensorRT-LLM's writer writes for a submitted record (no newline)."""
    return json.dumps(jsonl_record(record), separators=(",", ":"), allow_nan=False).encode()
