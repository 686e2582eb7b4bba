"""Every optional field of the line shapes (tensorrt_llm/serve/_perf_metrics_schema.py;
docs/writers.md, "Perf metrics"), from the Python record to the bytes: the
binding reads each dict in one walk into its own field table (python/jsonlw/native/
perf_metrics.cpp), so a field it misnamed or dropped would vanish from the file silently.
The dicts are given in scrambled key order: the line keeps it, as TensorRT-LLM's writer
copies the dicts it is given (the record's own keys stay in the schema's order)."""

import copy

from conftest import DISAGG_RECORD
from jsonlw.trtllm import perf_metrics_line


def test_every_step_and_chunk_field_is_written_in_the_given_order_and_unknown_ones_left_out():
    rec = {"request_id": "11", "phases": {"server": {
        "timing_metrics": {"last_token_time": 11.0, "arrival_time": 10.5},
        "time_breakdown_metrics": {
            "ctx_gpu_sample_time": None, "ctx_gpu_forward_time": 4.5,
            "step_metrics": [{
                "num_scheduled": 8, "num_capacity_fitting": 9, "req_generation_token_number": 1,
                "generation_token_number": 7, "context_token_number": 100,
                "num_gen_requests": 7, "num_ctx_requests": 1, "iter_batch_size": 8,
                "iter_counter": 17, "prev_batch_token_time": 0.5, "scheduled_time": 1.0,
                "token_time": None,        # unknown: left out
                "gpu_sample_time": -1.0,   # a negative duration: unknown, left out
                "gpu_forward_time": 0.0,   # a measured zero duration: kept
                "forward_end_time": 0.0,   # a zero time: unknown, left out
                "forward_start_time": 1.25, "iter": 5}],
            "ctx_chunk_metrics": [{"req_context_token_number": 512, "token_time": 2.5,
                                   "forward_start_time": 2.0}]}}}}
    assert perf_metrics_line(rec) == (
        b'{"request_id":11,"perf_metrics":{"timing_metrics":{"last_token_time":11.0,'
        b'"arrival_time":10.5}},"time_breakdown_metrics":{"ctx_gpu_forward_time":4.5,'
        b'"step_metrics":[{"num_scheduled":8,"num_capacity_fitting":9,'
        b'"req_generation_token_number":1,"generation_token_number":7,'
        b'"context_token_number":100,"num_gen_requests":7,"num_ctx_requests":1,'
        b'"iter_batch_size":8,"iter_counter":17,"prev_batch_token_time":0.5,'
        b'"scheduled_time":1.0,"gpu_forward_time":0.0,"forward_start_time":1.25,"iter":5}],'
        b'"ctx_chunk_metrics":[{"req_context_token_number":512,"token_time":2.5,'
        b'"forward_start_time":2.0}]},"status":"complete"}')


def test_a_worker_line_carries_its_ctx_and_disagg_request_ids_where_the_schema_puts_them():
    rec = {"request_id": "5", "disagg_request_id": 9001, "ctx_request_id": "17",
           "status": "complete",
           "phases": {"server": {"timing_metrics": {"arrival_time": 1.0, "last_token_time": 2.0}}}}
    assert perf_metrics_line(rec) == (
        b'{"request_id":5,"perf_metrics":{"timing_metrics":{"arrival_time":1.0,'
        b'"last_token_time":2.0}},"ctx_request_id":17,"status":"complete",'
        b'"disagg_request_id":9001}')


def test_disagg_sub_records_carry_their_own_ids_and_breakdown_and_required_times_stay_null():
    d = copy.deepcopy(DISAGG_RECORD)
    d["request_id"] = "900"
    d["ctx_request_id"] = "56"  # a worker-line field: not copied into the sub-records
    t = d["phases"]["disagg"]["timing_metrics"]
    t["ctx_dispatch_time"] = None
    t["server_first_token_time"] = None
    del d["phases"]["ctx"]["request_id"]  # falls back to the record's
    d["phases"]["gen"]["ctx_request_id"] = "55"
    d["phases"]["gen"]["time_breakdown_metrics"] = {"step_metrics": [{"token_time": 3.0, "iter": 1}]}
    assert perf_metrics_line(d) == (
        b'{"ctx_server":"http://ctx0:8001","gen_server":"http://gen0:8002",'
        b'"disagg_server_arrival_time":1000.0,"disagg_ctx_dispatch_time":null,'
        b'"disagg_server_first_token_time":null,"status":"complete",'
        b'"ctx_perf_metrics":{"request_id":900,"perf_metrics":{"timing_metrics":{'
        b'"server_arrival_time":1000.001,"arrival_time":1000.003,"first_scheduled_time":1000.006,'
        b'"first_token_time":1000.01,"last_token_time":1000.01,"server_first_token_time":1000.015}}},'
        b'"gen_perf_metrics":{"request_id":"gen-1","perf_metrics":{"timing_metrics":{'
        b'"server_arrival_time":1000.021,"arrival_time":1000.028,"kv_cache_transfer_start":1000.036,'
        b'"kv_cache_transfer_end":1000.045,"first_scheduled_time":1000.055,'
        b'"first_token_time":1000.066,"last_token_time":1000.2,"server_first_token_time":1000.066}},'
        b'"ctx_request_id":55,"time_breakdown_metrics":{"step_metrics":[{"token_time":3.0,'
        b'"iter":1}]}},"disagg_request_id":1}')


def test_speculative_decoding_is_written_after_kv_cache_metrics_its_fields_as_given():
    rec = {"request_id": "3", "phases": {"server": {
        "speculative_decoding": {"total_draft_tokens": 4, "total_accepted_draft_tokens": 3,
                                 "acceptance_rate": 0.75},
        "kv_cache_metrics": {"num_missed_blocks": 1},
        "last_iter": 9, "first_iter": 2,
        "timing_metrics": {"arrival_time": 1.0, "last_token_time": 2.0}}}}
    assert perf_metrics_line(rec) == (
        b'{"request_id":3,"perf_metrics":{"timing_metrics":{"arrival_time":1.0,'
        b'"last_token_time":2.0},"first_iter":2,"last_iter":9,"kv_cache_metrics":{'
        b'"num_missed_blocks":1},"speculative_decoding":{"total_draft_tokens":4,'
        b'"total_accepted_draft_tokens":3,"acceptance_rate":0.75}},"status":"complete"}')
