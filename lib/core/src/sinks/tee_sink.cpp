// TeeSink: every call to every branch, in order; the first branch's result is the writer's.
#include <jsonlw/sinks/tee_sink.hpp>

#include <stdexcept>

namespace jsonlw {
namespace {

// Calls `f` on every branch; the first error it returns.
template <class F>
std::error_code each(const std::vector<std::shared_ptr<LineSink>>& branches, F f)
{
    std::error_code first;
    for (const auto& b : branches) {
        const std::error_code ec = f(*b);
        if (ec && !first) first = ec;
    }
    return first;
}

}  // namespace

TeeSink::TeeSink(std::vector<std::shared_ptr<LineSink>> branches)
    : branches_(std::move(branches)), counts_(std::make_unique<Counts[]>(branches_.size()))
{
    if (branches_.empty()) throw std::invalid_argument("TeeSink needs at least one branch");
    for (const auto& b : branches_)
        if (!b) throw std::invalid_argument("TeeSink branch is null");
}

std::error_code TeeSink::start(const SinkContext& ctx)
{
    durability_ = ctx.durability;
    return each(branches_, [&](LineSink& b) { return b.start(ctx); });
}

AppendResult TeeSink::append(std::string_view key, const Lines& lines) noexcept
{
    AppendResult primary;
    for (std::size_t i = 0; i < branches_.size(); ++i) {
        const AppendResult r = branches_[i]->append(key, lines);
        Counts& c = counts_[i];
        c.written.fetch_add(r.records_written, std::memory_order_relaxed);
        c.failed.fetch_add(r.records_failed, std::memory_order_relaxed);
        c.unknown.fetch_add(r.records_unknown, std::memory_order_relaxed);
        if (r.records_written > 0) c.bytes.fetch_add(r.landed, std::memory_order_relaxed);
        c.unsynced += r.records_written;
        if (i == 0) primary = r;
    }
    return primary;
}

// Every branch is synced; only the first one's error reaches the writer, which under
// fsync_batch counts the group unknown on it — a second branch's failure must not cost the
// record of truth its counts, so it is counted in branch() alone.
std::error_code TeeSink::sync() noexcept
{
    std::error_code primary;
    for (std::size_t i = 0; i < branches_.size(); ++i) {
        const std::error_code ec = branches_[i]->sync();
        Counts& c = counts_[i];
        if (ec) {
            c.sync_failures.fetch_add(1, std::memory_order_relaxed);
            if (durability_ == Durability::fsync_batch && c.unsynced > 0) {
                c.unknown.fetch_add(c.unsynced, std::memory_order_relaxed);
                c.written.fetch_sub(c.unsynced, std::memory_order_relaxed);
            }
        }
        c.unsynced = 0;
        if (i == 0) primary = ec;
    }
    return primary;
}

std::error_code TeeSink::reopen() noexcept
{
    return each(branches_, [](LineSink& b) { return b.reopen(); });
}

std::optional<std::chrono::steady_clock::time_point> TeeSink::next_tick() const noexcept
{
    std::optional<std::chrono::steady_clock::time_point> due;
    for (const auto& b : branches_)
        if (const auto t = b->next_tick(); t && (!due || *t < *due)) due = t;
    return due;
}

void TeeSink::tick() noexcept
{
    for (const auto& b : branches_) b->tick();
}

void TeeSink::after_batch() noexcept
{
    for (const auto& b : branches_) b->after_batch();
}

void TeeSink::close_abandoned() noexcept
{
    for (const auto& b : branches_) b->close_abandoned();
}

void TeeSink::close(bool durable) noexcept
{
    for (const auto& b : branches_) b->close(durable);
}

std::vector<std::filesystem::path> TeeSink::files() const
{
    std::vector<std::filesystem::path> all;
    for (const auto& b : branches_) {
        auto f = b->files();
        all.insert(all.end(), f.begin(), f.end());
    }
    return all;
}

std::string TeeSink::describe(std::string_view key) const { return branches_[0]->describe(key); }

TeeSink::BranchCounts TeeSink::branch(std::size_t i) const noexcept
{
    const Counts& c = counts_[i];
    return {c.written.load(std::memory_order_relaxed), c.failed.load(std::memory_order_relaxed),
            c.unknown.load(std::memory_order_relaxed), c.bytes.load(std::memory_order_relaxed),
            c.sync_failures.load(std::memory_order_relaxed)};
}

}  // namespace jsonlw
