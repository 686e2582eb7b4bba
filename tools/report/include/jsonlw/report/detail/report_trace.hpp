// The request-trace part of the report: request and response lines (joined by trace_id),
// their statuses, header redaction (and credential-like headers that were NOT redacted),
// and the durable writer's sidecars checked against their shards.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace jsonlw::tools {

using CountMap = std::map<std::string, std::uint64_t, std::less<>>;

class TraceAccumulator {
public:
    void add_request(simdjson::dom::object rec);
    void add_response(simdjson::dom::object rec);
    void merge(TraceAccumulator&& other);
    // Joins requests and responses by trace_id (after every merge).
    void finish();

    std::uint64_t requests = 0, responses = 0;
    CountMap request_status, response_status, routes, response_kinds, http_status,
        termination_causes, redacted_by_name;
    std::uint64_t other_values = 0;  // distinct values past 32 per map, or wrong types
    std::uint64_t body_parse_errors = 0, validation_errors = 0, arrival_unknown = 0;
    std::uint64_t headers = 0, redacted = 0, requests_with_redaction = 0;
    // A header whose name the writer redacts (authorization, cookie, *token*, ...) whose value
    // is not "[redacted]": a credential may have leaked into the file.
    std::uint64_t unredacted_credentials = 0;
    // From finish():
    std::uint64_t requests_without_response = 0, responses_without_request = 0,
        duplicate_request_ids = 0;

private:
    std::vector<std::uint64_t> request_ids_, response_ids_;  // hashes of trace_id
    void count(CountMap& m, std::string_view key, std::uint64_t n = 1);
    // What a request and a response record both carry: the trace id's hash into `ids`, the
    // status into `status`.
    void add_common(simdjson::dom::object rec, std::vector<std::uint64_t>& ids, CountMap& status);
};

// One sidecar, checked with jsonlw::verify_request_trace_shards plus its own counts.
struct SidecarCheck {
    std::string name;  // relative to the report's directory
    bool read = false;
    bool consistent = false, counts_consistent = false, closed = false;
    std::uint64_t shards = 0, records = 0, bad = 0;
    std::uint64_t submitted = 0, persisted = 0, dropped = 0, unknown = 0, pending = 0;
    std::string error;
};

SidecarCheck check_sidecar(const std::filesystem::path& sidecar, const std::filesystem::path& root);

// Whether the request-trace writer redacts a header of this name (docs/writers.md).
bool is_credential_header(std::string_view name) noexcept;

}  // namespace jsonlw::tools
