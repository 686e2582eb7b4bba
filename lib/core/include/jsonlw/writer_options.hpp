// The configuration of one JsonlRecordWriter: an aggregate for designated initializers.
#pragma once

#include <jsonlw/durability.hpp>
#include <jsonlw/file_io.hpp>
#include <jsonlw/line_chain.hpp>
#include <jsonlw/log.hpp>
#include <jsonlw/otlp_options.hpp>
#include <jsonlw/overflow.hpp>
#include <jsonlw/sinks/line_sink.hpp>
#include <jsonlw/sinks/rotation.hpp>
#include <jsonlw/writer_messages.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace jsonlw {

// Read once, at construction. Fields are listed in declaration order (designated
// initializers must follow it).
struct WriterOptions {
    // Output directory, created with its parents by start(). Empty, without a `sink`: the
    // writer is inert (every call a cheap no-op, nothing counted, nothing created).
    std::filesystem::path directory{};
    // File-name stem: the default layout writes <directory>/<stem>-<host>-<pid>-<UTC>.jsonl.
    std::string stem = "records";
    // The noun log messages use: "Dropped 3 <subject> records".
    std::string subject = "JSONL";
    // Records the queue holds (any value >= 1; default 1024). After that, overflow decides.
    // Its cells (a record plus 8 bytes, in whole cache lines: 512 B for RawJsonWriter) are
    // allocated and made resident by the constructor, so no submit() takes a page fault:
    // 2^16 records of RawJsonWriter are 32 MiB, 2^21 are 1 GiB (docs/queue.md).
    std::size_t queue_capacity = 1024;
    // true: a queue of 2 MiB or more is mapped at a 2 MiB boundary and asks the kernel for
    // transparent huge pages before it is made resident (default false). Where THP is on
    // ("madvise" or "always") the queue starts faster — 2^16 records in ~2 ms instead of
    // ~48, 2^21 (1 GiB) in 0.07–1.8 s instead of ~1.4 s — and takes fewer TLB entries; the
    // memory is rounded up to whole 2 MiB pages. Off by default: on the hypervisor measured,
    // a 2^21 queue in huge pages read p99.9 14–19 us at 50,000 submits/s in some runs
    // (docs/queue.md).
    bool huge_pages = false;
    // At most this many records per append (default 1024). The drain writes whatever is
    // queued when it looks, so the cap only matters with a backlog: then each append's fixed
    // cost (a writev, the stat that checks the path, a hop) is shared by more records. A
    // smaller cap bounds what one failed append or a close cut short can cost (docs/queue.md).
    std::size_t batch_records = 1024;
    // A batch stops growing once its records' size hint reaches this (bytes; default 1 MiB).
    std::size_t batch_bytes = std::size_t{1} << 20;
    // Longest a record waits for its batch to fill before it is written (default 0: write as
    // soon as the drain wakes; the batch then holds whatever was queued). The wait ends early
    // at batch_records waiting, or at a quarter of queue_capacity if that is fewer. Counted
    // from the drain's last look at an empty queue, and the idle drain looks at least this
    // often (never more often than idle_poll): a record to an idle writer is written within it.
    std::chrono::milliseconds flush_interval{0};
    // What submit() does when the queue is full (default drop_newest).
    Overflow overflow = Overflow::drop_newest;
    // Overflow::block only: longest submit()/async_submit() waits for room (default 100 ms).
    std::chrono::milliseconds block_timeout{100};
    // When appended bytes are fsync'ed (default none).
    Durability durability = Durability::none;
    // Durability::fsync_interval only: longest unsynced data waits for fsync (default 1 s).
    std::chrono::milliseconds fsync_interval{1000};
    // async_close() completes at most this long after it was called (default 5 s); what is
    // not written by then is counted as dropped.shutdown (queued) or unknown (mid-append).
    std::chrono::milliseconds shutdown_timeout{5000};
    // Log sink (default: stderr). See LogSink for the threads it is called from.
    LogSink log{};
    // Where serialization and appends run. Default: a thread the writer owns. A given
    // executor must not be the one the writer was constructed with (appends block).
    std::optional<boost::asio::any_io_executor> io_executor{};
    // System-call seam for appends (default: POSIX). Tests inject faults through it.
    std::shared_ptr<FileIo> file_io{};
    // Permission bits of the files the writer creates (default 0640: owner read-write, group
    // read, others nothing), before the process umask is applied. Existing files keep theirs.
    mode_t file_mode = 0640;
    // How often the drain looks at an empty queue (default 1 ms). The drain polls: submit()
    // takes no lock and makes no system call however long the writer was idle — but in a
    // burst, when a quarter of the queue waits before the drain's next look: then one
    // submit() posts it a wake-up (docs/queue.md). After 50 ms without a record each quiet
    // look doubles the interval, up to idle_poll_max. While records keep coming the drain
    // looks once half a batch has come at the rate they come (a third to a half of the looks
    // cost the next submit() a cross-core miss: docs/queue.md), never less often than
    // idle_poll_max. So a record waits for the drain at most idle_poll_max, while records keep
    // coming or after an idle spell — or flush_interval, when one is set and shorter: it
    // bounds the back-off too.
    // 0: park at once instead — no idle CPU, but the first submit after the queue emptied
    // posts a wake-up to your executor (its lock, maybe a system call), and so does a full
    // batch while the drain lingers for flush_interval.
    std::chrono::microseconds idle_poll{1000};
    // The longest the drain waits between two looks at the queue (default 8 ms), idle or
    // while records keep coming: what an idle writer costs (about 125 looks a second), and
    // how many looks a steady stream's submit() calls pay for, against how soon a record is
    // written. Set it to idle_poll for a look every idle_poll while records keep coming.
    std::chrono::microseconds idle_poll_max{8000};

    // --- Files for shippers and loaders (docs/shipping.md) ---
    // The default layout's file over time: rotate_bytes, rotate_interval, open_suffix and
    // retention (Rotation says each; default: one file, never rotated, nothing deleted). The
    // FileSink the writer makes without a `sink` gets it; a write_batch() override with a
    // layout of its own, or a sink given here, ignores it (a FileSink given takes its own).
    Rotation rotation{};
    // Begin every line with {"seq":N,"writer":"<host>-<pid>-<generation>", …}. seq numbers
    // every record the writer counted, written or dropped: a record's queue position plus
    // the queue_full refusals counted before its batch was taken (strictly increasing in
    // file order). So over the collected files max(seq) + 1 - count(*) per writer equals the
    // drops it counted up to its last line (stats().dropped.seq_gaps()), and every file's
    // first line is unique. A record that does not serialize to a JSON object is then
    // malformed.
    bool envelope = false;

    // --- Serialization on several threads (docs/extending.md) ---
    // Threads that turn records into lines (default 1: the I/O thread alone). With N > 1 the
    // I/O thread takes up to N batches at a time and it and N - 1 helper threads the writer
    // owns serialize their records together, ahead of write_batch(); write_batch(), appends
    // and all counting stay on the I/O thread, batch after batch in queue order. Honoured by
    // writers whose serialize() is declared safe to run concurrently (concurrent_serialize():
    // RawJsonWriter, PerfMetricsWriter, RawOutputWriter); any other logs a warning at start()
    // and serializes on its I/O thread. 0 means 1; at most 64.
    std::size_t serializer_threads = 1;

    // --- Where lines go (docs/sinks.md) ---
    // The writer's destination. Default (null): a FileSink made from directory, stem and
    // `rotation` above. Any LineSink — a PartitionedFileSink, a KafkaSink, a
    // TeeSink of several, a MemorySink in tests — takes every line instead. With a sink the
    // directory may be empty (the writer is then not inert; a sink that writes files needs
    // one). One writer per sink.
    std::shared_ptr<LineSink> sink{};

    // --- Output format (docs/otlp.md) ---
    // jsonl: the records as lines. otlp: each group of records (a batch, or a batch's group
    // for one key) becomes one OTLP LogsData JSON line for the OpenTelemetry Collector's
    // otlpjsonfile receiver; the sink gets those lines. The shipped writers fill what `otlp`
    // leaves empty (event name, time fields, attributes) with their own.
    LineFormat format = LineFormat::jsonl;
    OtlpOptions otlp{};
    // The wording of the engine's log lines (default: "<subject> JSONL" messages).
    WriterMessages messages{};

    // --- Hash chain (docs/chain.md) ---
    // End every line with "chain":"<64 hex>", the hash of the previous line's value and this
    // line's bytes (ChainSink wraps the sink; the files' events go to <directory>/<stem>.chain;
    // `jsonlw verify DIR` checks them). Default none: lines are written exactly as before.
    ChainMode chain = ChainMode::none;
    // The key of ChainMode::hmac_sha256 (ChainKey::from_file reads a key file); required
    // there, refused with any other mode. Invalid chain options disable the writer at
    // start() with a logged error.
    std::optional<ChainKey> chain_key{};
};

}  // namespace jsonlw
