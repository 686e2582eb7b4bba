#include "shared_check.hpp"

#include "block_run.hpp"

#include <jsonlw_emu/launch_count.hpp>

#include <algorithm>
#include <cstring>
#include <deque>
#include <mutex>

namespace jsonlw::emu {

// One access kept for the hazard checks of the current interval.
struct SharedAccess {
    std::source_location where;
    std::uint32_t epoch;  // the thread's own clock when it accessed
    std::uint16_t thread;
};

// What one element saw in the current barrier interval (stale when `interval` is older).
// Reads are kept exactly only while one warp has read: threads of two warps are never ordered
// within an interval, so once two warps have read, any write races with one of them.
struct SharedCell {
    std::uint64_t interval = 0;
    bool has_write = false;
    SharedAccess write{};                  // the last plain write: it is ordered after every earlier one
    std::uint32_t read_warps = 0;          // warps that read (a block has at most 32)
    SharedAccess first_read{};             // a reader, and a reader of another warp than its
    SharedAccess other_warp_read{};
    std::vector<SharedAccess> warp_reads;  // while one warp has read: each reader's latest read
    std::vector<SharedAccess> atomics;     // unordered among themselves
};

struct SharedShadow {
    struct SiteRef {
        const char* file;
        std::uint32_t line, column;
        SharedAccessKind kind;
        std::uint32_t id;  // SharedCheck's site id
    };
    std::vector<SharedCell> cells;
    std::vector<SiteRef> sites;
    std::size_t last_site = 0;
};

SharedVarInfo::~SharedVarInfo() { delete shadow; }

namespace {

std::mutex g_mutex;
SharedCounters g_launch;  // the running launch (one grid at a time: run_grid's lock)
std::deque<SharedCounters> g_done;
constexpr std::size_t kKeep = 4096;

std::string site(const std::source_location& w)
{
    if (w.line() == 0) return "a line not recorded (a scalar)";
    const char* f = w.file_name();
    if (const char* s = std::strrchr(f, '/')) f = s + 1;
    return std::string(f) + ":" + std::to_string(w.line());
}

void add(SharedCounters& to, const SharedCounters& c) noexcept
{
    to.loads += c.loads;
    to.stores += c.stores;
    to.atomics += c.atomics;
    to.instructions += c.instructions;
    to.wavefronts += c.wavefronts;
    to.ideal_wavefronts += c.ideal_wavefronts;
    to.conflicted_instructions += c.conflicted_instructions;
    to.max_ways = std::max(to.max_ways, c.max_ways);
    to.barriers += c.barriers;
    to.collectives += c.collectives;
}

}  // namespace

SharedCheck& SharedCheck::this_thread()
{
    static thread_local SharedCheck check;
    return check;
}

void SharedCheck::begin_launch(const char* kernel)
{
    std::lock_guard lock(g_mutex);
    g_launch = SharedCounters{};
    g_launch.launch = kernel_launches();
    g_launch.kernel = kernel ? kernel : "";
}

void SharedCheck::end_launch()
{
    std::lock_guard lock(g_mutex);
    g_done.push_back(std::move(g_launch));
    while (g_done.size() > kKeep) g_done.pop_front();
}

std::vector<SharedCounters> take_shared_counters()
{
    std::lock_guard lock(g_mutex);
    std::vector<SharedCounters> out(std::make_move_iterator(g_done.begin()), std::make_move_iterator(g_done.end()));
    g_done.clear();
    return out;
}

void SharedCheck::begin_block(dim3 block, uint3 block_idx)
{
    block_ = block;
    block_idx_ = block_idx;
    threads_ = int(block.x * block.y * block.z);
    ++interval_;
    const std::size_t warps = std::size_t(threads_ + 31) / 32;
    warps_ = warps;
    own_.assign(std::size_t(threads_), 1);
    full_.assign(warps * 32, 0);
    full_gen_.assign(warps, 1);
    part_.resize(std::size_t(threads_) * 32);
    part_gen_.assign(std::size_t(threads_), 0);
    // A block that faulted (memcheck jumps past end_block) may have left instructions open.
    for (std::uint32_t id : touched_) {
        Site& s = sites_[id];
        std::fill(s.occurrence.begin(), s.occurrence.end(), 0u);
        for (WarpSite& ws : s.warps) {
            ws.used = 0;
            ws.others.clear();
        }
        s.touched = false;
    }
    touched_.clear();
    hot_ = Hot{};
    counts_ = SharedCounters{};
    kernel_ = nullptr;
}

void SharedCheck::barrier()
{
    flush_instructions();
    ++interval_;
    ++counts_.barriers;
}

void SharedCheck::collective(int base, unsigned mask)
{
    ++counts_.collectives;
    const std::size_t w = std::size_t(base >> 5);
    const int lanes = std::min(32, threads_ - base);
    const unsigned all = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1;
    if (mask == all) {
        // Every lane learns every lane's own clock, the most anyone knows of it.
        for (int j = 0; j < lanes; ++j) full_[w * 32 + std::size_t(j)] = own_[std::size_t(base + j)]++;
        ++full_gen_[w];
        return;
    }
    std::uint32_t join[32] = {};
    for (int b = 0; b < 32; ++b) {
        if (!(mask >> b & 1u)) continue;
        for (int j = 0; j < 32; ++j) join[j] = std::max(join[j], known(base + b, j));
        join[b] = own_[std::size_t(base + b)];
    }
    for (int b = 0; b < 32; ++b) {
        if (!(mask >> b & 1u)) continue;
        std::memcpy(&part_[std::size_t(base + b) * 32], join, sizeof join);
        part_gen_[std::size_t(base + b)] = full_gen_[w];
        ++own_[std::size_t(base + b)];  // what this lane does next is after the collective
    }
}

void SharedCheck::end_block()
{
    flush_instructions();
    std::lock_guard lock(g_mutex);
    add(g_launch, counts_);
    ++g_launch.blocks;
    if (g_launch.kernel.empty() && kernel_) g_launch.kernel = kernel_;
}

void SharedCheck::flush_instructions()
{
    hot_ = Hot{};
    for (std::uint32_t id : touched_) {
        Site& s = sites_[id];
        for (WarpSite& ws : s.warps) {
            std::sort(ws.others.begin(), ws.others.end());
            auto other = ws.others.begin();
            std::vector<std::uint32_t>& v = words_;
            for (std::uint32_t k = 0; k < ws.used; ++k) {
                const auto first = std::uint32_t(ws.first[k]), n = std::uint32_t(ws.first[k] >> 32);
                std::uint32_t distinct = n, ways = 1;
                if (other != ws.others.end() && other->first == k) {
                    v.clear();
                    for (std::uint32_t x = 0; x < n; ++x) v.push_back(first + x);
                    for (; other != ws.others.end() && other->first == k; ++other) v.push_back(other->second);
                    std::sort(v.begin(), v.end());
                    v.erase(std::unique(v.begin(), v.end()), v.end());
                    distinct = std::uint32_t(v.size());
                    std::uint32_t per_bank[32] = {};
                    for (const std::uint32_t x : v) ways = std::max(ways, ++per_bank[x & 31u]);
                }
                const std::uint32_t ideal = (distinct + 31) / 32;
                ++counts_.instructions;
                counts_.wavefronts += ways;
                counts_.ideal_wavefronts += ideal;
                if (ways > ideal) ++counts_.conflicted_instructions;
                counts_.max_ways = std::max(counts_.max_ways, ways);
            }
            ws.used = 0;
            ws.others.clear();
        }
        std::fill(s.occurrence.begin(), s.occurrence.end(), 0u);
        s.touched = false;
    }
    touched_.clear();
}

std::string SharedCheck::thread_name(int linear) const
{
    const unsigned i = unsigned(linear);
    return "thread (" + std::to_string(i % block_.x) + "," + std::to_string((i / block_.x) % block_.y) + "," +
           std::to_string(i / (block_.x * block_.y)) + ")";
}

void SharedCheck::hazard(ThreadState& me, const SharedVarInfo& var, std::size_t index, const char* what, int other,
                         const std::source_location& other_where, const char* other_kind, const char* my_kind,
                         const std::source_location& where)
{
    std::string elem = var.name;
    if (var.count > 1) elem += "[" + std::to_string(index) + "]";
    const std::size_t off = index * var.elem_size;
    me.block->fault(me, cudaErrorLaunchFailure,
                    std::string("racecheck: ") + what + " hazard on __shared__ " + elem + " (bytes " +
                        std::to_string(off) + "-" + std::to_string(off + var.elem_size - 1) + " of " +
                        std::to_string(std::size_t(var.count) * var.elem_size) + ") in " + var.function +
                        ", block (" + std::to_string(block_idx_.x) + "," + std::to_string(block_idx_.y) + "," +
                        std::to_string(block_idx_.z) + "): " + thread_name(other) + " " + other_kind + " at " +
                        site(other_where) + ", then " + thread_name(me.linear) + " " + my_kind + " at " +
                        site(where) + ", with no __syncthreads between them and no warp collective or " +
                        "__syncwarp both took part in");
}

void SharedCheck::out_of_bounds(ThreadState& me, const SharedVarInfo& var, std::size_t index, SharedAccessKind kind,
                                const std::source_location& where)
{
    me.block->fault(me, cudaErrorIllegalAddress,
                    std::string("memcheck: invalid __shared__ ") + (kind == SharedAccessKind::read ? "read" : "write") +
                        " of " + var.name + "[" + std::to_string(index) + "], an array of " + std::to_string(var.count) +
                        ", by " + BlockRun::who(me) + " at " + site(where) + " in " + var.function);
}

void SharedCheck::access(ThreadState& me, SharedVarInfo& var, std::size_t index, SharedAccessKind kind,
                         const std::source_location& where)
{
    if (index >= var.count) [[unlikely]]
        out_of_bounds(me, var, index, kind, where);
    if (!var.shadow) {
        var.shadow = new SharedShadow;
        var.shadow->cells.resize(var.count);
    }
    SharedShadow& sh = *var.shadow;
    if (!kernel_) kernel_ = var.function;
    const int t = me.linear;

    // --- racecheck ---------------------------------------------------------------------
    SharedCell& c = sh.cells[index];
    if (c.interval != interval_) {
        c.interval = interval_;
        c.has_write = false;
        c.atomics.clear();
        c.read_warps = 0;
    }
    const std::uint32_t my_warp = 1u << (t >> 5);
    // The common case, a loop over a buffer the whole block reads: nothing new to remember.
    const bool known_reader = kind == SharedAccessKind::read && !c.has_write && c.atomics.empty() &&
                              (c.read_warps & my_warp) && c.read_warps != my_warp;
    if (known_reader) ++counts_.loads;
    else check_race(me, var, index, kind, where, c, my_warp);
    count_instruction(me.linear, sh, var, index, kind, where);
}

void SharedCheck::check_race(ThreadState& me, SharedVarInfo& var, std::size_t index, SharedAccessKind kind,
                             const std::source_location& where, SharedCell& c, std::uint32_t my_warp)
{
    const int t = me.linear;
    const SharedAccess mine{where, own_[std::size_t(t)], static_cast<std::uint16_t>(t)};
    const auto unordered = [&](const SharedAccess& a) { return a.thread != t && !ordered(a.thread, a.epoch, t); };
    // A write or an atomic after the reads of this interval.
    const auto check_reads = [&](const char* my_kind) {
        if (c.read_warps & ~my_warp) {
            const SharedAccess& r = (1u << (c.first_read.thread >> 5)) != my_warp ? c.first_read : c.other_warp_read;
            hazard(me, var, index, "write-after-read", r.thread, r.where, "reads", my_kind, where);
        }
        if (c.read_warps)
            for (const SharedAccess& r : c.warp_reads)
                if (unordered(r)) hazard(me, var, index, "write-after-read", r.thread, r.where, "reads", my_kind, where);
    };
    switch (kind) {
    case SharedAccessKind::read:
        ++counts_.loads;
        if (c.has_write && unordered(c.write))
            hazard(me, var, index, "read-after-write", c.write.thread, c.write.where, "writes", "reads", where);
        for (const SharedAccess& a : c.atomics)
            if (unordered(a)) hazard(me, var, index, "read-after-write", a.thread, a.where, "updates atomically", "reads", where);
        if (c.read_warps == 0) {
            c.read_warps = my_warp;
            c.first_read = mine;
            c.warp_reads.clear();
            c.warp_reads.push_back(mine);
        } else if (c.read_warps == my_warp) {
            const auto same = std::find_if(c.warp_reads.begin(), c.warp_reads.end(),
                                           [t](const SharedAccess& r) { return r.thread == t; });
            if (same != c.warp_reads.end()) *same = mine;  // its latest read is the one to order after
            else c.warp_reads.push_back(mine);
        } else if (!(c.read_warps & my_warp)) {
            if ((c.read_warps & (c.read_warps - 1)) == 0) c.other_warp_read = mine;
            c.read_warps |= my_warp;
        }
        break;
    case SharedAccessKind::write:
        ++counts_.stores;
        if (c.has_write && unordered(c.write))
            hazard(me, var, index, "write-after-write", c.write.thread, c.write.where, "writes", "writes", where);
        for (const SharedAccess& a : c.atomics)
            if (unordered(a)) hazard(me, var, index, "write-after-write", a.thread, a.where, "updates atomically", "writes", where);
        check_reads("writes");
        // Whatever comes next and is not ordered after this write races with it; whatever is
        // ordered after it is ordered after everything the write was checked against.
        c.has_write = true;
        c.write = mine;
        c.atomics.clear();
        c.read_warps = 0;
        break;
    case SharedAccessKind::atomic:
        ++counts_.atomics;
        if (c.has_write && unordered(c.write))
            hazard(me, var, index, "write-after-write", c.write.thread, c.write.where, "writes", "updates atomically", where);
        check_reads("updates atomically");
        if (!c.atomics.empty() && c.atomics.back().thread == t) c.atomics.back() = mine;
        else c.atomics.push_back(mine);
        break;
    }
}

// Makes hot_ the site of this access, for thread t.
void SharedCheck::enter_site(int t, SharedShadow& sh, SharedAccessKind kind, const std::source_location& where)
{
    const auto same = [&](const SharedShadow::SiteRef& r) {
        return r.line == where.line() && r.column == where.column() && r.kind == kind && r.file == where.file_name();
    };
    std::size_t k = sh.last_site;
    if (k >= sh.sites.size() || !same(sh.sites[k])) {
        k = std::size_t(std::find_if(sh.sites.begin(), sh.sites.end(), same) - sh.sites.begin());
        if (k == sh.sites.size()) {
            sh.sites.push_back({where.file_name(), where.line(), where.column(), kind, std::uint32_t(sites_.size())});
            sites_.emplace_back();
        }
        sh.last_site = k;
    }
    const std::uint32_t id = sh.sites[k].id;
    Site& s = sites_[id];
    if (!s.touched) {
        s.touched = true;
        touched_.push_back(id);
        if (s.occurrence.size() < std::size_t(threads_)) s.occurrence.resize(std::size_t(threads_), 0u);
        if (s.warps.size() < warps_) s.warps.resize(warps_);
    }
    hot_ = Hot{&sh, where.file_name(), where.line(), where.column(), kind, t, &s.occurrence[std::size_t(t)],
               &s.warps[std::size_t(t >> 5)]};
}

// The warp-wide instruction this access belongs to: lane t's n-th run of this site.
void SharedCheck::count_instruction(int t, SharedShadow& sh, const SharedVarInfo& var, std::size_t index,
                                    SharedAccessKind kind, const std::source_location& where)
{
    if (hot_.shadow != &sh || hot_.thread != t || hot_.line != where.line() || hot_.column != where.column() ||
        hot_.kind != kind || hot_.file != where.file_name())
        enter_site(t, sh, kind, where);
    const std::uint32_t occ = (*hot_.occurrence)++;
    WarpSite& ws = *hot_.warp;
    if (ws.used <= occ) {
        if (ws.first.size() <= occ) ws.first.resize(std::size_t(occ) + 1 + ws.first.size() / 2);
        std::fill(ws.first.begin() + ws.used, ws.first.begin() + occ + 1, 0u);
        ws.used = occ + 1;
    }
    const std::size_t byte = index * var.elem_size;
    const auto first = std::uint32_t(byte / 4), n = std::uint32_t((byte + var.elem_size - 1) / 4 - byte / 4 + 1);
    const std::uint64_t words = first | std::uint64_t{n} << 32;
    std::uint64_t& ins = ws.first[occ];
    if (ins == 0) ins = words;
    else if (ins != words)
        for (std::uint32_t x = 0; x < n; ++x) ws.others.emplace_back(occ, first + x);
}

void record_shared_access(SharedVarInfo& var, std::size_t index, SharedAccessKind kind, const std::source_location& where)
{
    ThreadState* me = t_current;
    if (!me) return;
    me->block->shared().access(*me, var, index, kind, where);
}

}  // namespace jsonlw::emu
