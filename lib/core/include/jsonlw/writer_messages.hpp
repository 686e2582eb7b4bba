// WriterMessages: the wording of the engine's log lines, one fmt format string per event, so
// a writer that re-creates another stack's writer (TensorRT-LLM's request trace) speaks its
// words without rewriting the engine's. Read once, with the rest of WriterOptions.
#pragma once

#include <string>

namespace jsonlw {

// {0} is always WriterOptions::subject; the other arguments are listed per message. A format
// string fmt rejects (a bad field) is logged as the default wording instead.
struct WriterMessages {
    // start() could not create the directory, or the sink's start failed: {1} the error,
    // {2} where (the directory, or the sink's description).
    std::string disabling = "Disabling {0} JSONL output: {1} ({2})";
    // async_close() ran out of shutdown_timeout.
    std::string close_timed_out = "Timed out flushing {0} JSONL; dropping remaining records";
    // start() found the directory usable and started the sink, just before the drain starts
    // (default empty: nothing logged): {1} the directory, {2} the sink's description.
    std::string started{};
    // The queue refused records (logged at the 1st, then every 1000th): {1} how many so far.
    std::string queue_full = "Dropped {1} {0} records";
    // serialize() threw MalformedRecord: {1} its message.
    std::string malformed = "Dropped malformed {0} record: {1}";
    // A sink or an append failed: {1} the error, {2} where (sink's description, or the path).
    std::string write_failed = "Failed to write {0} JSONL: {1} ({2})";
};

}  // namespace jsonlw
