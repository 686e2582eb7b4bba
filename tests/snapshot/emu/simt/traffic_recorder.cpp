// record_global_access (jsonlw_emu/global_access.hpp), LaunchRecorder and take_launch_traffic
// (jsonlw_emu/traffic.hpp). Recording costs a site lookup (the last site first) and an append
// per access; the grouping into instructions, the sectors and the distinct ranges are worked
// out once per block, so memory is bounded by one block's accesses per OS thread.
#include "traffic_recorder.hpp"

#include <jsonlw_emu/global_access.hpp>
#include <jsonlw_emu/runtime_hooks.hpp>
#include <jsonlw_emu/simt.hpp>

#include <algorithm>
#include <array>
#include <cstring>
#include <deque>
#include <memory>

namespace jsonlw::emu {

namespace {

// A source site of the kernels this OS thread ran: its identity, whether it stores.
struct Site {
    const char* file;
    std::uint32_t line, column;
    bool store;
};

struct Access {
    std::uint32_t site;  // then, once the block ended: its instruction
    std::uint16_t lane;  // the GPU thread's linear index in the block
    std::uint16_t bytes;
    std::uintptr_t addr;
};

// The block running on this OS thread.
struct BlockTraffic {
    bool active = false;
    int threads = 0;
    std::vector<Site> sites;  // kept across blocks: sites are few
    std::uint32_t last = ~0u;
    std::vector<Access> accesses;

    std::uint32_t site(const std::source_location& w, bool store)
    {
        const auto same = [&](const Site& s) {
            return s.line == w.line() && s.column == w.column() && s.store == store &&
                   (s.file == w.file_name() || std::strcmp(s.file, w.file_name()) == 0);
        };
        if (last < sites.size() && same(sites[last])) return last;
        for (std::uint32_t i = 0; i < sites.size(); ++i)
            if (same(sites[i])) return last = i;
        sites.push_back(Site{w.file_name(), w.line(), w.column(), store});
        return last = static_cast<std::uint32_t>(sites.size() - 1);
    }
};

constinit thread_local BlockTraffic* t_block = nullptr;

BlockTraffic& this_thread_block()
{
    static thread_local BlockTraffic b;
    t_block = &b;
    return b;
}

// The allocation of an address, from a few cached answers of find_allocation.
class AllocationCache {
public:
    struct Hit {
        std::uintptr_t base;  // 0: no allocation
        std::size_t size;
    };
    Hit find(std::uintptr_t a)
    {
        for (const Hit& h : hits_)
            if (h.base != 0 && a >= h.base && a - h.base < round16(h.size)) return h;
        const AllocationInfo info = find_allocation(reinterpret_cast<const void*>(a));
        if (!info.found) return Hit{0, 0};
        const Hit h{reinterpret_cast<std::uintptr_t>(info.base), info.size};
        hits_[next_++ % hits_.size()] = h;
        return h;
    }

private:
    static std::size_t round16(std::size_t n) noexcept { return (n + 15) / 16 * 16; }
    std::array<Hit, 8> hits_{};
    std::size_t next_ = 0;
};

// Sorts and merges ranges in place.
void coalesce(std::vector<LaunchRecorder::Range>& r)
{
    std::sort(r.begin(), r.end());
    std::size_t out = 0;
    for (const auto& x : r) {
        if (out > 0 && x.first <= r[out - 1].second) r[out - 1].second = std::max(r[out - 1].second, x.second);
        else r[out++] = x;
    }
    r.resize(out);
}

// Which warp-wide instruction each access of the block was: rewrites Access::site into the
// instruction's index and returns each instruction's site. A GPU runs a warp's lanes through a
// site together, once per pass; lanes that a branch or a shorter loop left out are missing
// from that pass. Here lanes run one after another, so passes are recovered from the counts:
// a site that every lane of the warp executed equally often is taken by all of them together,
// its n-th pass being each lane's n-th execution. Such "uniform" accesses mark the lanes'
// common progress (their count so far, the epoch); any other site's pass is (epoch, the n-th
// execution since the epoch began), so a loop over tiles whose inner loop only some lanes
// enter pairs the lanes of the same tile.
std::vector<std::uint32_t> group_into_instructions(BlockTraffic& b)
{
    const std::size_t sites = b.sites.size(), threads = std::size_t(b.threads), warps = (threads + 31) / 32;
    std::vector<std::uint32_t> count(sites * threads, 0);
    for (const Access& a : b.accesses) ++count[a.site * threads + a.lane];
    std::vector<char> uniform(sites * warps, 0);
    for (std::size_t s = 0; s < sites; ++s)
        for (std::size_t w = 0; w < warps; ++w) {
            const std::size_t lo = w * 32, hi = std::min(threads, lo + 32);
            const std::uint32_t c = count[s * threads + lo];
            bool same = c > 0;
            for (std::size_t l = lo + 1; l < hi && same; ++l) same = count[s * threads + l] == c;
            uniform[s * warps + w] = same;
        }
    std::vector<std::uint32_t> instruction_site;
    std::vector<std::vector<std::uint32_t>> uniform_pass(sites * warps);  // n-th pass -> instruction
    std::map<std::array<std::uint32_t, 4>, std::uint32_t> other_pass;      // (site, warp, epoch, n)
    std::vector<std::uint32_t> epoch(threads, 0);
    std::fill(count.begin(), count.end(), 0u);  // now: executions so far (uniform), since the epoch (other)
    std::vector<std::uint32_t> since(sites * threads, ~0u);  // the epoch that count is since
    for (Access& a : b.accesses) {
        const std::size_t w = a.lane / 32, at = a.site * threads + a.lane;
        std::uint32_t ins;
        if (uniform[a.site * warps + w]) {
            std::vector<std::uint32_t>& passes = uniform_pass[a.site * warps + w];
            const std::uint32_t n = count[at]++;
            if (n == passes.size()) {
                passes.push_back(static_cast<std::uint32_t>(instruction_site.size()));
                instruction_site.push_back(a.site);
            }
            ins = passes[n];
            ++epoch[a.lane];
        } else {
            if (since[at] != epoch[a.lane]) {
                since[at] = epoch[a.lane];
                count[at] = 0;
            }
            const std::array<std::uint32_t, 4> key{a.site, std::uint32_t(w), epoch[a.lane], count[at]++};
            const auto [it, added] = other_pass.try_emplace(key, static_cast<std::uint32_t>(instruction_site.size()));
            if (added) instruction_site.push_back(a.site);
            ins = it->second;
        }
        a.site = ins;
    }
    return instruction_site;
}

std::mutex g_published_mutex;
std::deque<LaunchTraffic> g_published;
constexpr std::size_t kKeep = 256;

}  // namespace

void record_global_access(const void* p, std::size_t bytes, bool store, const std::source_location& where) noexcept
{
    const ThreadState* t = t_current;
    BlockTraffic* b = t_block;
    if (!t || !b || !b->active) return;
    b->accesses.push_back(Access{b->site(where, store), static_cast<std::uint16_t>(t->linear),
                                 static_cast<std::uint16_t>(bytes), reinterpret_cast<std::uintptr_t>(p)});
}

void LaunchRecorder::begin_block(int threads)
{
    BlockTraffic& b = this_thread_block();
    b.active = true;
    b.threads = threads;
    b.accesses.clear();
}

void LaunchRecorder::end_block()
{
    BlockTraffic& b = this_thread_block();
    b.active = false;
    const std::vector<std::uint32_t> instruction_site = group_into_instructions(b);
    // Accesses by instruction (a counting sort: each instruction's lanes in recorded order).
    const std::size_t n_ins = instruction_site.size();
    std::vector<std::uint32_t> start(n_ins + 1, 0);
    for (const Access& a : b.accesses) ++start[a.site + 1];
    for (std::size_t i = 0; i < n_ins; ++i) start[i + 1] += start[i];
    std::vector<Access> by_ins(b.accesses.size());
    {
        std::vector<std::uint32_t> fill(start.begin(), start.end() - 1);
        for (const Access& a : b.accesses) by_ins[fill[a.site]++] = a;
    }
    AllocationCache allocations;
    std::map<std::uintptr_t, BufferTraffic> buffers;
    std::vector<Range> reads, writes;
    for (std::size_t i = 0; i < n_ins; ++i) {
        auto first = by_ins.begin() + start[i];
        const auto last = by_ins.begin() + start[i + 1];
        // Lanes that passed a predicated load without loading (ld_global_if) sort first,
        // touch nothing, and an instruction no lane loaded in is not counted.
        std::sort(first, last, [](const Access& x, const Access& y) { return x.addr < y.addr; });
        while (first != last && first->bytes == 0) ++first;
        if (first == last) continue;
        const bool store = b.sites[instruction_site[i]].store;
        const AllocationCache::Hit where = allocations.find(first->addr);
        AccessCounts c;
        c.instructions = 1;
        std::uintptr_t covered = 0;   // bytes below this are counted
        std::uint64_t last_sector = ~0ull;
        std::vector<Range>& ranges = store ? writes : reads;
        for (auto a = first; a != last; ++a) {
            const std::uintptr_t lo = a->addr, hi = a->addr + a->bytes;
            c.requested_bytes += a->bytes;
            if (hi > covered) {
                const std::uintptr_t from = std::max(lo, covered);
                c.used_bytes += hi - from;
                if (!ranges.empty() && from >= ranges.back().first && from <= ranges.back().second)
                    ranges.back().second = std::max(ranges.back().second, hi);
                else ranges.emplace_back(from, hi);
                covered = hi;
            }
            // Sectors from the allocation's start: cudaMalloc aligns to 256 bytes on a GPU.
            const std::uint64_t s0 = (lo - where.base) / sector_bytes, s1 = (hi - 1 - where.base) / sector_bytes;
            const std::uint64_t from = last_sector == ~0ull ? s0 : std::max(s0, last_sector + 1);
            if (s1 >= from) c.sectors += s1 - from + 1;
            if (last_sector == ~0ull || s1 > last_sector) last_sector = s1;
        }
        BufferTraffic& buf = buffers[where.base];
        buf.base = reinterpret_cast<const void*>(where.base);
        buf.size = where.size;
        (store ? buf.stores : buf.loads) += c;
    }
    coalesce(reads);
    coalesce(writes);
    std::lock_guard lock(m_);
    for (const auto& [base, bt] : buffers) {
        BufferTraffic& to = buffers_[base];
        to.base = bt.base;
        to.size = bt.size;
        to.loads += bt.loads;
        to.stores += bt.stores;
    }
    reads_.insert(reads_.end(), reads.begin(), reads.end());
    writes_.insert(writes_.end(), writes.begin(), writes.end());
}

void LaunchRecorder::publish(std::string kernel, dim3 grid, dim3 block, bool failed, std::uint64_t collectives)
{
    LaunchTraffic t;
    t.kernel = std::move(kernel);
    t.grid = grid;
    t.block = block;
    t.failed = failed;
    t.warp_collectives = collectives;
    std::lock_guard lock(m_);
    coalesce(reads_);
    coalesce(writes_);
    AllocationCache allocations;
    // Distinct bytes and sectors per buffer; ranges never span two allocations (guard pages).
    const auto distinct = [&](const std::vector<Range>& ranges, bool store) {
        std::uintptr_t last_base = 1;
        std::uint64_t last_sector = 0;
        for (const Range& r : ranges) {
            const AllocationCache::Hit where = allocations.find(r.first);
            BufferTraffic& buf = buffers_[where.base];
            buf.base = reinterpret_cast<const void*>(where.base);
            buf.size = where.size;
            std::uint64_t s0 = (r.first - where.base) / sector_bytes;
            const std::uint64_t s1 = (r.second - 1 - where.base) / sector_bytes;
            if (where.base == last_base && s0 <= last_sector) s0 = last_sector + 1;
            const std::uint64_t sectors = s1 >= s0 ? s1 - s0 + 1 : 0;
            if (store) {
                buf.distinct_written_sectors += sectors;
            } else {
                buf.distinct_read_bytes += r.second - r.first;
                buf.distinct_read_sectors += sectors;
            }
            last_sector = where.base == last_base ? std::max(last_sector, s1) : s1;
            last_base = where.base;
        }
    };
    distinct(reads_, false);
    distinct(writes_, true);
    for (const auto& [base, bt] : buffers_) {
        t.loads += bt.loads;
        t.stores += bt.stores;
        t.distinct_read_bytes += bt.distinct_read_bytes;
        t.distinct_read_sectors += bt.distinct_read_sectors;
        t.distinct_written_sectors += bt.distinct_written_sectors;
        t.buffers.push_back(bt);
    }
    std::lock_guard published(g_published_mutex);
    g_published.push_back(std::move(t));
    while (g_published.size() > kKeep) g_published.pop_front();
}

BufferTraffic LaunchTraffic::buffer(const void* p) const noexcept
{
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    for (const BufferTraffic& b : buffers) {
        const auto base = reinterpret_cast<std::uintptr_t>(b.base);
        if (b.base != nullptr && a >= base && a - base < b.size) return b;
    }
    return BufferTraffic{};
}

std::vector<LaunchTraffic> take_launch_traffic()
{
    std::lock_guard lock(g_published_mutex);
    std::vector<LaunchTraffic> out(std::make_move_iterator(g_published.begin()), std::make_move_iterator(g_published.end()));
    g_published.clear();
    return out;
}

}  // namespace jsonlw::emu
