// WriterHooks<Record>: the encoder of a JsonlRecordWriter subclass, the thin adapter of the
// subclass form (docs/extending.md, "The subclass adapter"): it forwards each RecordEncoder
// function to the writer's virtual function of the same name. Made and owned by the
// writer's engine (JsonlRecordWriter's subclass constructor); runs where RecordEncoder's
// functions run. Included at the end of jsonl_record_writer.hpp, which it completes.
#pragma once

#include <jsonlw/jsonl_record_writer.hpp>
#include <jsonlw/record_encoder.hpp>

#include <cstddef>
#include <exception>
#include <span>

namespace jsonlw {
namespace detail {

template <class Record>
class WriterHooks final : public RecordEncoder<Record> {
public:
    explicit WriterHooks(JsonlRecordWriter<Record>& w) noexcept : w_(w) {}
    void serialize(const Record& rec, JsonLine& line) override { w_.serialize(rec, line); }
    void write_batch(std::span<const Record> batch, BatchOutput<Record>&) override
    {
        w_.write_batch(batch);
    }
    std::size_t record_bytes(const Record& rec) const noexcept override
    {
        return w_.record_bytes(rec);
    }
    bool malformed_error(const std::exception& e) const noexcept override
    {
        return w_.malformed_error(e);
    }
    bool concurrent_serialize() const noexcept override { return w_.concurrent_serialize(); }
    void begin_chunk(std::span<const Record> chunk) noexcept override { w_.begin_chunk(chunk); }

private:
    JsonlRecordWriter<Record>& w_;
};

}  // namespace detail
}  // namespace jsonlw
