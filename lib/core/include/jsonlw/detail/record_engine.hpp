// RecordEngine<Record>: the typed half of a writer's engine, on the I/O thread — it runs a
// unit: pops a batch (or a unit of them) from the writer's queue, has the encoder serialize
// it and name each record's key, hands the lines to the sink stack (LineSink::append()) and
// has what the sinks report counted, by the SinkSet (sink_set.hpp) and UnitContext
// (unit_context.hpp). Owned by JsonlRecordWriter<Record>
// (one per writer), which owns the queue it pops and the producer side; every function runs
// on the writer's I/O thread (or under the core's consumer lock, or on a serializer helper
// for serialize_chunk()). It owns the writer's encoder (record_encoder.hpp) and is the
// BatchOutput the encoder's write_batch() writes through.
#pragma once

#include <jsonlw/detail/bounded_ring.hpp>
#include <jsonlw/detail/otlp_record_form.hpp>
#include <jsonlw/detail/serial_cache.hpp>
#include <jsonlw/detail/sink_set.hpp>
#include <jsonlw/detail/unit_context.hpp>
#include <jsonlw/detail/writer_core.hpp>
#include <jsonlw/json_line.hpp>
#include <jsonlw/lines.hpp>
#include <jsonlw/malformed_record.hpp>
#include <jsonlw/record_encoder.hpp>

#include <algorithm>
#include <filesystem>
#include <cstdint>
#include <exception>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace jsonlw::detail {

template <class Record>
class RecordEngine final : private UnitSource, public BatchOutput<Record> {
public:
    // `encoder` is not null (JsonlRecordWriter checks); `ring` is the writer's queue; `shape`
    // says which of the encoder's layout functions the engine must call.
    RecordEngine(std::shared_ptr<WriterCore> core, BoundedRing<Record>& ring,
                 std::shared_ptr<RecordEncoder<Record>> encoder, EncoderShape shape)
        : core_(std::move(core)), unit_(core_->unit_context()), sinks_(core_->sink_set()),
          encoder_(std::move(encoder)),
          enc_(*encoder_), shape_(shape), ring_(ring)
    {
        core_->bind(this, &ring_, shape.own_write_batch);
        // A unit holds up to serializer_threads batches (see WriterOptions).
        const std::size_t unit = std::clamp<std::size_t>(core_->options().serializer_threads, 1, 64);
        staging_.reserve(core_->options().batch_records * unit);
        if (core_->options().envelope) staging_seq_.reserve(core_->options().batch_records * unit);
        batch_ends_.reserve(unit);
    }
    RecordEngine(const RecordEngine&) = delete;
    RecordEngine& operator=(const RecordEngine&) = delete;

    // --- UnitSource: the unit, from the queue to the sinks (I/O thread) ---
    bool run_unit(UnitContext& unit) noexcept override
    {
        const WriterOptions& o = core_->options();
        std::size_t n = 0;
        bool full = true;  // the last batch popped was full: the queue may hold more
        if (unit.lock_for_pop()) {
            for (std::size_t b = 0; b < core_->unit_batches() && full; ++b) {
                const std::size_t m = pop_batch(o.batch_records, o.batch_bytes);
                n += m;
                full = m == o.batch_records;
            }
            // The pages the next pushes go to: past the tail while records still wait (a
            // full batch), else past the head, where the tail is now.
            ring_.warm_ahead(full ? ring_.claimed() : ring_.consumed(), Ring::warm_cells);
            ring_.note_backlog(n > 0 && full);
            unit.popped(n);
        }
        if (n == 0) return false;
        write_staged();
        unit.written(n);
        return full;
    }

    // --- BatchOutput (I/O thread) ---
    void write_by_key(std::span<const Record> batch) override
    {
        if (batch.empty()) return;
        if (!shape_.keyed) {  // the default key(): the batch is one group, under no key
            write_lines({}, serialize_batch(batch));
            return;
        }
        std::string& first = group_key(0);
        first.clear();
        enc_.key(batch.front(), first);
        std::size_t i = 1;
        for (; i < batch.size(); ++i) {
            probe_.clear();
            enc_.key(batch[i], probe_);
            if (probe_ != first) break;
        }
        if (i == batch.size()) {  // one key: the batch is the group
            write_lines(first, serialize_batch(batch));
            return;
        }
        // Several keys: groups in order of first appearance (few per batch: a linear search).
        // probe_ holds batch[i]'s key on each turn.
        groups_used_ = 1;
        auto& head = groups_[0].records;
        head.clear();
        for (std::size_t j = 0; j < i; ++j) head.push_back(&batch[j]);
        for (; i < batch.size(); ++i) {
            std::size_t g = 0;
            while (g < groups_used_ && groups_[g].key != probe_) ++g;
            if (g == groups_used_) {
                group_key(groups_used_) = probe_;
                groups_[groups_used_].records.clear();
                ++groups_used_;
            }
            groups_[g].records.push_back(&batch[i]);
            if (i + 1 < batch.size()) {
                probe_.clear();
                enc_.key(batch[i + 1], probe_);
            }
        }
        for (std::size_t g = 0; g < groups_used_; ++g) {
            const auto& recs = groups_[g].records;
            write_lines(groups_[g].key,
                        serialize_batch(std::span<const Record* const>(recs.data(), recs.size())));
        }
    }
    Lines serialize_batch(std::span<const Record> group) override
    {
        return serialize_each(group, [](const Record& r) -> const Record& { return r; });
    }
    Lines serialize_batch(std::span<const Record* const> group) override
    {
        return serialize_each(group, [](const Record* r) -> const Record& { return *r; });
    }
    // The hand-off: the lines to the sink stack (a FileSink's append() is the writev), what
    // it reports counted by the SinkSet.
    AppendResult write_lines(std::string_view key, const Lines& lines) noexcept override
    {
        if (lines.records == 0 && lines.bytes.empty()) return {};
        LineSink* const to = sinks_.target();
        // After close's last hook: nowhere to write.
        if (!to)
            return sinks_.unwritten(lines, std::make_error_code(std::errc::bad_file_descriptor));
        return sinks_.counted(*to, key, lines, to->append(key, lines));
    }
    AppendResult append(const std::filesystem::path& path, const Lines& lines) noexcept override
    {
        if (const std::error_code ec = sinks_.path_key(path, path_key_))
            return sinks_.unwritten(lines, ec);
        return write_lines(path_key_, lines);
    }
    bool preserialized(const Record& rec) const noexcept override
    {
        const std::size_t i = staged_index(rec);
        return i != not_staged && core_->serial_cache().find(i) != nullptr;
    }

    const std::shared_ptr<RecordEncoder<Record>>& encoder() const noexcept { return encoder_; }

private:
    using Ring = BoundedRing<Record>;

    // write_by_key()'s groups, reused batch after batch (entries past groups_used_ keep
    // their memory).
    struct KeyGroup {
        std::string key;
        std::vector<const Record*> records;
    };
    std::string& group_key(std::size_t g)
    {
        if (g == groups_.size()) groups_.emplace_back();
        return groups_[g].key;
    }

    static constexpr std::size_t not_staged = static_cast<std::size_t>(-1);
    // The staging index of `rec`; not_staged when it is not one of the unit's records (a
    // group an override built elsewhere).
    std::size_t staged_index(const Record& rec) const noexcept
    {
        const auto at = reinterpret_cast<std::uintptr_t>(&rec);
        const auto first = reinterpret_cast<std::uintptr_t>(staging_.data());
        if (at < first) return not_staged;
        const std::size_t i = (at - first) / sizeof(Record);
        return i < staging_.size() ? i : not_staged;
    }
    // The envelope "seq" of a staged record; nullptr when `rec` is not one of the unit's.
    const std::uint64_t* staged_seq(const Record& rec) const noexcept
    {
        const std::size_t i = staged_index(rec);
        return i < staging_seq_.size() ? &staging_seq_[i] : nullptr;
    }

    // Serializes `rec` as one line at the end of `buf` (the envelope around it when set; an
    // OTLP log record when the core hands out `otlp`, the running thread's form).
    // On failure `buf` is as before and fail(outcome, what) says why, inside the handler.
    template <class Fail>
    Serialized serialize_into(const Record& rec, const std::uint64_t* seq, LineBuffer& buf,
                              OtlpRecordForm* otlp, Fail fail) noexcept
    {
        const std::size_t at = buf.size();
        try {
            const bool envelope = core_->options().envelope;
            if (envelope) core_->envelope_open(buf, seq);
            const std::size_t body = buf.size();
            JsonLine line(buf, otlp);
            enc_.serialize(rec, line);
            if (line.view().empty()) throw MalformedRecord("serialize() wrote nothing");
            if (otlp) otlp->finish(buf, body);
            if (envelope) core_->envelope_close(buf, body);
            buf.push_back(otlp ? ',' : '\n');  // log records: inside the LogsData line
            return line.sanitized() ? Serialized::sanitized_line
                                    : Serialized::line;
        } catch (const MalformedRecord& e) {
            buf.resize(at);
            fail(Serialized::malformed, e.what());
            return Serialized::malformed;
        } catch (const std::exception& e) {
            buf.resize(at);
            const auto kind = enc_.malformed_error(e) ? Serialized::malformed
                                                 : Serialized::unexpected;
            fail(kind, e.what());
            return kind;
        } catch (...) {
            buf.resize(at);
            fail(Serialized::unexpected, "unknown exception");
            return Serialized::unexpected;
        }
    }

    template <class Range, class Deref>
    Lines serialize_each(const Range& group, Deref deref)
    {
        LineBuffer& buf = core_->line_buffer();
        buf.clear();
        Lines out;
        // LineFormat::otlp: the group's records go in one LogsData line (lines.hpp).
        OtlpRecordForm* const otlp = core_->otlp_form();
        if (otlp) otlp->open_document(buf);
        out.log_records = otlp != nullptr;
        const SerialCache& cache = core_->serial_cache();
        const auto count_failure = [this](Serialized kind, std::string_view what) {
            if (kind == Serialized::malformed) unit_.malformed(what);
            else unit_.unexpected(Stage::serialize, what);
        };
        for (const auto& item : group) {
            const Record& rec = deref(item);
            const SerialEntry* done =
                cache.active ? cache.find(staged_index(rec)) : nullptr;
            Serialized outcome;
            if (done) {  // serialized ahead (serializer_threads): copy or count it, in order
                outcome = done->outcome;
                if (outcome == Serialized::line ||
                    outcome == Serialized::sanitized_line) {
                    const std::string_view bytes = cache.line(*done);
                    buf.append(bytes.data(), bytes.data() + bytes.size());
                } else {
                    count_failure(outcome, cache.error(*done));
                }
            } else {
                outcome = serialize_into(rec, staged_seq(rec), buf, otlp, count_failure);
            }
            if (outcome == Serialized::line) ++out.records;
            else if (outcome == Serialized::sanitized_line) ++out.records, ++out.sanitized;
        }
        if (otlp) otlp->close_document(buf, 0, out.records);
        out.bytes = {buf.data(), buf.size()};
        return out;
    }

    // Moves up to max_records records — fewer once their size hints reach max_bytes — from
    // the queue into a new batch at the end of the staging unit; returns how many it moved.
    // Under the consumer lock.
    std::size_t pop_batch(std::size_t max_records, std::size_t max_bytes) noexcept
    {
        std::size_t bytes = 0;
        const bool envelope = core_->options().envelope;
        // The envelope's seq: queue position + refusals so far (read once per batch: the sum
        // stays strictly increasing, and refused records become gaps like dropped ones).
        const std::uint64_t refused = envelope ? core_->queue_full_count() : 0;
        // staging_ (and staging_seq_) hold batch_records already: push_back does not
        // allocate (nor throw).
        const auto take = [&](Record&& r, std::uint64_t pos) noexcept {
            bytes += enc_.record_bytes(r);
            staging_.push_back(std::move(r));
            if (envelope) staging_seq_.push_back(pos + refused);
        };
        const std::size_t before = staging_.size();
        while (staging_.size() - before < max_records && bytes < max_bytes &&
               ring_.try_pop_into(take)) {
        }
        if (staging_.size() > before) batch_ends_.push_back(staging_.size());
        return staging_.size() - before;
    }
    // write_batch() over each staged batch in order, exceptions contained; then clears the
    // unit.
    void write_staged() noexcept
    {
        core_->preserialize(staging_.size());
        std::size_t begin = 0;
        for (const std::size_t end : batch_ends_) {
            try {
                const std::span<const Record> batch(staging_.data() + begin, end - begin);
                // Not serialized ahead on the helpers: prepared here, on the I/O thread.
                if (!core_->serial_cache().active) enc_.begin_chunk(batch);
                if (shape_.own_write_batch) enc_.write_batch(batch, *this);
                else write_by_key(batch);  // the default write_batch()
            } catch (const std::exception& e) {
                unit_.unexpected(Stage::write, e.what());
            } catch (...) {
                unit_.unexpected(Stage::write, "unknown exception");
            }
            begin = end;
        }
        core_->end_unit();
        staging_.clear();
        staging_seq_.clear();
        batch_ends_.clear();
    }
    void serialize_chunk(SerialChunk& chunk, std::uint32_t chunk_index,
                         SerialEntry* entries) noexcept override
    {
        enc_.begin_chunk(std::span<const Record>(staging_.data() + chunk.first, chunk.count));
        LineBuffer& buf = chunk.bytes;
        OtlpRecordForm* const otlp = core_->otlp_form();
        if (otlp) otlp->begin_batch();
        for (std::size_t i = chunk.first; i < chunk.first + chunk.count; ++i) {
            SerialEntry& e = entries[i];
            e.chunk = chunk_index;
            e.begin = static_cast<std::uint32_t>(buf.size());
            e.outcome = serialize_into(
                staging_[i], i < staging_seq_.size() ? &staging_seq_[i] : nullptr, buf, otlp,
                [&](Serialized, std::string_view what) {
                    // The message, counted later on the I/O thread; begin indexes it.
                    e.begin = static_cast<std::uint32_t>(chunk.errors.size());
                    try {
                        chunk.errors.emplace_back(what);
                    } catch (...) {
                        e.begin = SerialEntry::no_message;
                    }
                });
            e.end = e.outcome == Serialized::line ||
                            e.outcome == Serialized::sanitized_line
                        ? static_cast<std::uint32_t>(buf.size())
                        : 0;
        }
    }
    bool serializes_concurrently() const noexcept override { return enc_.concurrent_serialize(); }
    std::size_t discard_queued() noexcept override
    {
        std::size_t n = 0;
        while (ring_.consumed() < ring_.claimed()) {
            if (ring_.try_pop_into([](Record&&) noexcept {})) ++n;
        }
        return n;
    }


    std::shared_ptr<WriterCore> core_;
    UnitContext& unit_;  // the core's
    SinkSet& sinks_;     // the core's: the sink stack
    const std::shared_ptr<RecordEncoder<Record>> encoder_;  // kept until the writer is gone
    RecordEncoder<Record>& enc_;
    const EncoderShape shape_;
    Ring& ring_;  // the writer's
    std::vector<Record> staging_;            // I/O thread only
    std::vector<std::uint64_t> staging_seq_;  // their envelope seq numbers, under envelope
    std::vector<std::size_t> batch_ends_;     // the unit's batches: staging_ end of each
    std::vector<KeyGroup> groups_;            // write_by_key(): I/O thread only
    std::size_t groups_used_ = 0;
    std::string probe_;                       // write_by_key(): the key being placed
    std::string path_key_;                    // append(path): the stack's key for the path
};

}  // namespace jsonlw::detail
