// RecordEncoder<Record>: how a record becomes a line, and where its line goes (its key) —
// the part of a writer that knows its record type. BatchOutput<Record>: what a batch write
// may call (write by key, serialize a group, hand lines to the sink, append to a file).
//
// A writer is the engine (JsonlRecordWriter: queue, drain, I/O thread, accounting, close) plus
// an encoder. Give the engine an encoder object —
//     JsonlRecordWriter<MyRecord> w(ex, opts, std::make_shared<MyEncoder>());
// — and the engine owns it (shared_ptr) until its I/O thread is done with it: a class that
// wraps such a writer needs no shutdown() in its destructor, however much state its encoder
// keeps. (A subclass that overrides JsonlRecordWriter's own virtual functions instead is
// called on its half-destroyed object unless it stops the writer first: see
// docs/extending.md.)
//
// Threads: every function runs on the writer's I/O thread, one batch at a time — except
// that with WriterOptions::serializer_threads > 1 and concurrent_serialize() true,
// serialize(), malformed_error() and begin_chunk() also run on the writer's helper threads,
// for different records at once (state per helper: index it by serializer_slot()).
#pragma once

#include <jsonlw/append_result.hpp>
#include <jsonlw/detail/serial_cache.hpp>
#include <jsonlw/json_line.hpp>
#include <jsonlw/lines.hpp>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace jsonlw {

template <class Record>
class BatchOutput {
public:
    // The default batch write: groups the batch by the encoder's key() once — in order of
    // first appearance, submission order kept within a key — then serializes each group and
    // sends it to the writer's sink under its key. A batch under one key (the usual case)
    // is serialized as it lies, with no grouping at all.
    virtual void write_by_key(std::span<const Record> batch) = 0;
    // Serializes a group with the shared malformed accounting (a MalformedRecord drops its
    // record alone, counted and logged). The result stays valid until the next call. The
    // pointer form serves groups of records that are not adjacent in the batch.
    virtual Lines serialize_batch(std::span<const Record> group) = 0;
    virtual Lines serialize_batch(std::span<const Record* const> group) = 0;
    // Sends complete lines to the writer's sink under `key` (a PartitionedFileSink's file,
    // relative to the directory; ignored by a FileSink), counted from what the sink reports.
    virtual AppendResult write_lines(std::string_view key, const Lines& lines) noexcept = 0;
    // Appends complete lines to `path` (created with its parents; descriptor kept open; fsync
    // per durability) through the writer's sink stack — its chain and OTLP encoding, as
    // write_lines() — counted as write_lines() counts. Lines for elsewhere (a broker) go
    // through a LineSink (docs/sinks.md).
    virtual AppendResult append(const std::filesystem::path& path, const Lines& lines) noexcept = 0;
    // Whether `rec`, one of the batch's records, was serialized ahead on a helper thread
    // (its batch-wide preparation, begin_chunk(), is done).
    virtual bool preserialized(const Record& rec) const noexcept = 0;

protected:
    ~BatchOutput() = default;
};

template <class Record>
class RecordEncoder {
public:
    virtual ~RecordEncoder() = default;

    // How a record becomes one line. Throw MalformedRecord to drop it alone (counted,
    // logged); any other exception drops it as unexpected, unless malformed_error() says so.
    virtual void serialize(const Record& rec, JsonLine& line) = 0;

    // Where a record's line goes: append its key to `key` (empty on entry) — the file, or
    // folder/file, relative to the writer's directory, as a PartitionedFileSink names it.
    // Leave it empty (the default) for the sink's one destination. I/O thread, once per
    // record of a batch, before the batch is serialized (docs/extending.md, "Layouts").
    virtual void key(const Record& rec, std::string& key)
    {
        (void)rec;
        (void)key;
    }

    // Where a batch's lines go. The default groups the batch by key() and sends each group
    // to the writer's sink under its key (out.write_by_key()). Override it only for a layout
    // a key cannot express: group the records, and per group call out.serialize_batch()
    // then out.write_lines() (the sink, under a key) or out.append() (a file it names).
    // Every record must end up in exactly one group.
    virtual void write_batch(std::span<const Record> batch, BatchOutput<Record>& out)
    {
        out.write_by_key(batch);
    }

    // A size estimate in bytes, used to cap a batch at batch_bytes (default 0: unknown).
    virtual std::size_t record_bytes(const Record&) const noexcept { return 0; }

    // Which other exceptions from serialize() mean "cannot be represented" (default none).
    virtual bool malformed_error(const std::exception&) const noexcept { return false; }

    // True when serialize() (and malformed_error(), begin_chunk()) may run on several threads
    // at once for different records. Read once, by start().
    virtual bool concurrent_serialize() const noexcept { return false; }

    // Batch-wide preparation, called on the thread that will serialize `chunk` (consecutive
    // records) before it serializes any of them: on a helper thread for the chunk it takes
    // ahead of write_batch(), or on the I/O thread for a whole batch, before write_batch(),
    // when the batch was not serialized ahead. What it prepares holds for that thread until
    // its next begin_chunk(): every record serialize() is given was announced by one.
    virtual void begin_chunk(std::span<const Record> chunk) noexcept { (void)chunk; }

protected:
    // Which serializer thread runs: 0 on the I/O thread, 1 .. serializer_threads - 1 on the
    // helpers; one slot's state is never used by two threads at once.
    static std::size_t serializer_slot() noexcept { return detail::current_serializer_slot(); }
};

namespace detail {

// Which of RecordEncoder's layout functions an encoder type overrides, read at compile time
// by JsonlRecordWriter's constructor. The engine writes a batch of an encoder that keeps the
// default write_batch() and key() under its one key with no call per record; one known only
// as RecordEncoder<Record> (or whose functions cannot be named unambiguously) counts as
// overriding both, which is always correct, only slower.
struct EncoderShape {
    bool own_write_batch = true;  // write_batch() overridden: the engine calls it
    bool keyed = true;            // key() overridden: the engine asks it per record
};

template <class Encoder, class Record>
constexpr EncoderShape encoder_shape() noexcept
{
    EncoderShape shape;
    if constexpr (!std::is_same_v<Encoder, RecordEncoder<Record>>) {
        if constexpr (requires { &Encoder::write_batch; })
            shape.own_write_batch =
                !std::is_same_v<decltype(&Encoder::write_batch),
                                void (RecordEncoder<Record>::*)(std::span<const Record>,
                                                                BatchOutput<Record>&)>;
        if constexpr (requires { &Encoder::key; })
            shape.keyed = !std::is_same_v<decltype(&Encoder::key),
                                          void (RecordEncoder<Record>::*)(const Record&,
                                                                          std::string&)>;
    }
    return shape;
}

}  // namespace detail
}  // namespace jsonlw
