// SnapshotStage::create, the shared configuration checks, and SlotLease.
#include "backends.hpp"
#include "slot_ring.hpp"

#include <stdexcept>
#include <string>

namespace jsonlw::snapshot {

const char* to_string(Backend b) noexcept
{
    switch (b) {
    case Backend::automatic: return "auto";
    case Backend::cpu: return "cpu";
    case Backend::cuda: return "cuda";
    }
    return "?";
}

const char* to_string(CaptureResult r) noexcept
{
    switch (r) {
    case CaptureResult::enqueued: return "enqueued";
    case CaptureResult::dropped: return "dropped";
    case CaptureResult::invalid_argument: return "invalid argument";
    }
    return "?";
}

void SlotLease::release() noexcept
{
    if (ring_ && slot_ >= 0) ring_->release(slot_);
    ring_.reset();
    slot_ = -1;
}

namespace detail {

void validate_config(const SnapshotConfig& c)
{
    auto bad = [](const std::string& what) {
        throw std::invalid_argument("SnapshotConfig: " + what);
    };
    if (c.k < 1 || c.k > SnapshotConfig::max_k)
        bad("k = " + std::to_string(c.k) + " is outside 1..64");
    if (c.max_rows < 1) bad("max_rows must be at least 1");
    if (c.max_vocab < 1) bad("max_vocab must be at least 1");
    if (c.ring_slots < 2) bad("ring_slots must be at least 2");
    if (c.ring_slots > 1024) bad("ring_slots must be at most 1024");
    if (c.first_gen != FirstGenMode::off && c.max_first_gen_rows_per_step < 1)
        bad("max_first_gen_rows_per_step must be at least 1 when first_gen is captured");
    if (c.max_first_gen_rows_per_step < 0) bad("max_first_gen_rows_per_step is negative");
    if (c.watchdog.count() < 1) bad("watchdog must be at least 1 ms");
    if (c.close_timeout.count() < 1 || c.close_timeout > std::chrono::seconds(60))
        bad("close_timeout must be 1 ms .. 60 s");
    if (c.cpu_threads < 0) bad("cpu_threads is negative");
    if (c.cpu_parallel_min_rows < 1) bad("cpu_parallel_min_rows must be at least 1");
    if (c.cpu_worker_nice < 0 || c.cpu_worker_nice > 19) bad("cpu_worker_nice must be in 0..19");
    if (c.slot_wait.count() < 0) bad("slot_wait is negative");
    if (c.slot_wait > std::chrono::seconds(10)) bad("slot_wait must be at most 10 s");
}

}  // namespace detail

std::unique_ptr<SnapshotStage> SnapshotStage::create(const SnapshotConfig& config, Backend backend,
                                                     BatchSink sink)
{
    detail::validate_config(config);
    if (!sink) throw std::invalid_argument("SnapshotStage::create: the sink is empty");
    if (backend == Backend::cpu) return detail::make_cpu_stage(config, std::move(sink));
#if defined(JSONLW_SNAPSHOT_EMULATED_DEVICE)
    // The test-only build against the emulated device (tests/snapshot/emu): only an explicit
    // Backend::cuda reaches it, so Auto means the CPU there as on any machine without a GPU.
    if (backend == Backend::automatic) return detail::make_cpu_stage(config, std::move(sink));
#endif
    std::string why;
    if (auto stage = detail::make_cuda_stage(config, sink, &why)) return stage;
    if (backend == Backend::cuda)
        throw std::runtime_error("SnapshotStage::create: Backend::cuda unavailable: " + why);
    return detail::make_cpu_stage(config, std::move(sink));
}

}  // namespace jsonlw::snapshot
