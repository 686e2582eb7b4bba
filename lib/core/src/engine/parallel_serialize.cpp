// WriterOptions::serializer_threads: start() makes the helpers (serializer_pool.cpp), and
// preserialize() — on the I/O thread, before a unit's write_batch() calls — cuts the unit's
// records into chunks, has the serializer threads fill the SerialCache, and returns once all
// are done. Counting stays on the I/O thread: serialize_batch() reads the outcomes in order.
#include "writer_core_impl.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace jsonlw::detail {

namespace {

// Fewer records per chunk than this are not worth a hand-over to another thread.
constexpr std::size_t min_chunk_records = 16;
// Chunks per serializer thread: more chunks than threads let the I/O thread take a late
// helper's share (on a busy machine a helper may wake after the work is gone).
constexpr std::size_t chunks_per_thread = 4;

}  // namespace

void WriterCore::Impl::start_serializers() noexcept
{
    const std::size_t wanted = std::clamp<std::size_t>(self.opts_.serializer_threads, 1,
                                                       max_serializer_threads);
    if (wanted == 1) return;
    if (!self.units_ || !self.units_->serializes_concurrently()) {
        accounting.log(
            LogLevel::warning,
            fmt::format("serializer_threads = {} ignored: the {} writer's serialize() is not "
                        "declared safe to run concurrently; serializing on its I/O thread",
                        self.opts_.serializer_threads, self.opts_.subject));
        return;
    }
    try {
        const std::size_t max_chunks = wanted * chunks_per_thread;
        self.serial_.chunks.resize(max_chunks);
        self.serial_.entries.reserve(wanted * self.opts_.batch_records);
        pool = std::make_unique<SerializerPool>(wanted - 1, self.opts_.stem);
        self.unit_batches_ = wanted;
    } catch (const std::exception& e) {
        pool.reset();
        accounting.log(LogLevel::warning,
                       fmt::format("serializer_threads = {}: cannot start the helpers ({}); "
                                   "serializing on the I/O thread",
                                   wanted, e.what()));
    }
}

bool WriterCore::preserialize(std::size_t n) noexcept
{
    SerialCache& c = serial_;
    c.active = false;
    Impl& d = *impl_;
    if (!d.pool || n < 2 * min_chunk_records) return false;
    const std::size_t threads = d.pool->helpers() + 1;
    const std::size_t k =
        std::min({n / min_chunk_records, threads * chunks_per_thread, c.chunks.size()});
    try {
        c.entries.assign(n, SerialEntry{});  // within the capacity start() reserved
    } catch (...) {
        return false;  // serialized inline by serialize_batch()
    }
    for (std::size_t i = 0; i < k; ++i) {
        SerialChunk& ch = c.chunks[i];
        ch.first = n * i / k;
        ch.count = n * (i + 1) / k - ch.first;
        ch.bytes.clear();
        ch.errors.clear();
    }
    d.pool->run(
        k,
        [](void* ctx, std::size_t i) noexcept {
            auto& core = *static_cast<WriterCore*>(ctx);
            core.units_->serialize_chunk(core.serial_.chunks[i], static_cast<std::uint32_t>(i),
                                         core.serial_.entries.data());
        },
        this);
    c.active = true;
    return true;
}

}  // namespace jsonlw::detail
