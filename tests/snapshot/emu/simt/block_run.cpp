#include "block_run.hpp"

#include "settings.hpp"

#include <cstring>
#include <exception>
#include <map>
#include <sstream>
#include <utility>

namespace jsonlw::emu {

namespace bcd = boost::context::detail;

namespace {

std::string site(const std::source_location& w)
{
    const char* f = w.file_name();
    if (const char* s = std::strrchr(f, '/')) f = s + 1;
    return std::string(f) + ":" + std::to_string(w.line());
}

bool same_site(const std::source_location& a, const std::source_location& b)
{
    return a.line() == b.line() && std::strcmp(a.file_name(), b.file_name()) == 0;
}

std::string hex(unsigned v)
{
    std::ostringstream o;
    o << "0x" << std::hex << v;
    return o.str();
}

// The lanes of a mask as "0-15,20".
std::string lane_list(unsigned mask)
{
    std::string s;
    for (int b = 0; b < 32;) {
        if (!(mask >> b & 1u)) {
            ++b;
            continue;
        }
        int e = b;
        while (e + 1 < 32 && (mask >> (e + 1) & 1u)) ++e;
        if (!s.empty()) s += ',';
        s += std::to_string(b);
        if (e > b) s += "-" + std::to_string(e);
        b = e + 1;
    }
    return s;
}

std::uint64_t splitmix(std::uint64_t& x) noexcept
{
    std::uint64_t z = (x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

}  // namespace

BlockRun::BlockRun(FiberStacks& stacks, dim3 grid, dim3 block, uint3 block_idx, std::uint64_t seed,
                   Invoke invoke, const void* closure)
    : stacks_(stacks), grid_(grid), block_(block), block_idx_(block_idx), seed_(seed),
      rng_(seed ^ (std::uint64_t{block_idx.x} * 0x100000001b3ull) ^
           (std::uint64_t{block_idx.y} << 40) ^ (std::uint64_t{block_idx.z} << 56)),
      invoke_(invoke), closure_(closure), shared_(SharedCheck::this_thread())
{
}

std::string BlockRun::who(const ThreadState& t)
{
    return "block (" + std::to_string(t.block_idx.x) + "," + std::to_string(t.block_idx.y) + "," +
           std::to_string(t.block_idx.z) + ") thread (" + std::to_string(t.thread_idx.x) + "," +
           std::to_string(t.thread_idx.y) + "," + std::to_string(t.thread_idx.z) + ")";
}

std::uint64_t BlockRun::next_random() noexcept { return splitmix(rng_); }

bool BlockRun::run()
{
    const int n = static_cast<int>(block_.x * block_.y * block_.z);
    stacks_.reserve(n);
    lanes_.assign(std::size_t(n), Lane{});
    runnable_.clear();
    runnable_.reserve(std::size_t(n));
    head_ = 0;
    runnable_count_ = 0;
    by_warp_ = (seed_ & 1u) != 0;
    if (by_warp_) {
        const int warps = (n + 31) / 32;
        warp_runnable_.assign(std::size_t(warps), {});
        warp_order_.resize(std::size_t(warps));
        for (int w = 0; w < warps; ++w) warp_order_[std::size_t(w)] = w;
        for (int w = warps - 1; w > 0; --w)
            std::swap(warp_order_[std::size_t(w)], warp_order_[std::size_t(next_random() % std::uint64_t(w + 1))]);
    }
    for (int i = 0; i < n; ++i) {
        Lane& l = lanes_[std::size_t(i)];
        l.ts.thread_idx = uint3{unsigned(i) % block_.x, (unsigned(i) / block_.x) % block_.y,
                                unsigned(i) / (block_.x * block_.y)};
        l.ts.block_idx = block_idx_;
        l.ts.block_dim = block_;
        l.ts.grid_dim = grid_;
        l.ts.linear = i;
        l.ts.block = this;
        l.ctx = bcd::make_fcontext(stacks_.top(i), FiberStacks::stack_bytes, &BlockRun::entry);
        make_runnable(i);
    }
    live_ = n;
    shared_.begin_block(block_, block_idx_);
    while (!failed_) {
        if (runnable_count_ == 0) {
            if (live_ > 0) {
                failed_ = true;
                report_ = "deadlock in block (" + std::to_string(block_idx_.x) + "," +
                          std::to_string(block_idx_.y) + "," + std::to_string(block_idx_.z) +
                          "): no thread can go on; " + describe_stuck();
            }
            break;
        }
        Lane& l = lanes_[std::size_t(pick())];
        l.state = State::running;
        t_current = &l.ts;
        const bcd::transfer_t t = bcd::jump_fcontext(l.ctx, this);
        l.ctx = t.fctx;
    }
    t_current = nullptr;
    shared_.end_block();
    add_warp_collectives(collectives_);
    return !failed_;
}

int BlockRun::pick()
{
    --runnable_count_;
    if (by_warp_) {
        for (int w : warp_order_) {
            std::vector<int>& pool = warp_runnable_[std::size_t(w)];
            if (pool.empty()) continue;
            const std::size_t j = std::size_t(next_random() % pool.size());
            const int i = pool[j];
            pool[j] = pool.back();
            pool.pop_back();
            return i;
        }
    }
    if (seed_ != 0) {
        const std::size_t left = runnable_.size() - head_;
        const std::size_t j = head_ + std::size_t(next_random() % left);
        std::swap(runnable_[head_], runnable_[j]);
    }
    const int i = runnable_[head_++];
    if (head_ == runnable_.size()) {
        runnable_.clear();
        head_ = 0;
    }
    return i;
}

void BlockRun::make_runnable(int lane)
{
    lanes_[std::size_t(lane)].state = State::runnable;
    ++runnable_count_;
    if (by_warp_) warp_runnable_[std::size_t(lane >> 5)].push_back(lane);
    else runnable_.push_back(lane);
}

void BlockRun::entry(bcd::transfer_t t)
{
    auto* self = static_cast<BlockRun*>(t.data);
    self->sched_ = t.fctx;
    Lane& me = self->lanes_[std::size_t(t_current->linear)];
    try {
        self->invoke_(self->closure_);
    } catch (const std::exception& e) {
        self->fail_here("exception in " + who(me.ts) + ": " + e.what());
    } catch (...) {
        self->fail_here("exception in " + who(me.ts));
    }
    self->on_exit(me);
    self->switch_out();
    std::terminate();  // an exited thread is never resumed
}

void BlockRun::switch_out()
{
    const bcd::transfer_t t = bcd::jump_fcontext(sched_, nullptr);
    sched_ = t.fctx;
}

void BlockRun::fail_here(std::string why)
{
    if (!failed_) {
        failed_ = true;
        report_ = std::move(why);
    }
    switch_out();
    std::terminate();  // the scheduler never resumes a failed block's threads
}

void BlockRun::on_exit(Lane& me)
{
    me.state = State::exited;
    --live_;
    ++exited_since_barrier_;
    // A collective of this warp that names this lane can no longer complete.
    const int base = me.ts.linear & ~31, lane = me.ts.linear & 31;
    for (int b = 0; b < 32 && base + b < int(lanes_.size()); ++b) {
        const Lane& o = lanes_[std::size_t(base + b)];
        if (o.state == State::in_collective && (o.call.mask >> lane & 1u)) {
            fail_here("warp collective: " + who(me.ts) + " exited while " + who(o.ts) + " waits in " +
                      collective_name(o.call.kind) + " (mask " + hex(o.call.mask) + ") at " +
                      site(o.call.where) + " for it");
        }
    }
    if (arrived_ > 0 && arrived_ == live_) release_barrier();
}

void BlockRun::barrier(ThreadState& t, std::source_location where)
{
    Lane& me = lanes_[std::size_t(t.linear)];
    if (arrived_ == 0) {
        barrier_where_ = where;
    } else if (!same_site(where, barrier_where_)) {
        fail_here("synccheck: " + who(t) + " waits at __syncthreads at " + site(where) + " while " +
                  std::to_string(arrived_) + " threads of its block wait at the one at " +
                  site(barrier_where_));
    }
    me.state = State::at_barrier;
    ++arrived_;
    if (arrived_ == live_) release_barrier();
    switch_out();
}

void BlockRun::release_barrier()
{
    if (exited_since_barrier_ > 0) {
        fail_here("synccheck: " + std::to_string(exited_since_barrier_) +
                  " threads of block (" + std::to_string(block_idx_.x) + "," + std::to_string(block_idx_.y) +
                  "," + std::to_string(block_idx_.z) + ") exited without reaching the __syncthreads at " +
                  site(barrier_where_) + " that " + std::to_string(arrived_) + " threads wait at");
    }
    for (int i = 0; i < int(lanes_.size()); ++i)
        if (lanes_[std::size_t(i)].state == State::at_barrier) make_runnable(i);
    shared_.barrier();
    arrived_ = 0;
    exited_since_barrier_ = 0;
}

std::uint64_t BlockRun::collective(ThreadState& t, Collective kind, unsigned mask, std::uint64_t value,
                                   int arg, int width, std::source_location where)
{
    Lane& me = lanes_[std::size_t(t.linear)];
    const int lane = t.linear & 31, base = t.linear & ~31;
    const int n = int(lanes_.size());
    // Built only for a report: this function runs for every lane of every collective.
    const auto what = [&] {
        return std::string(collective_name(kind)) + " (mask " + hex(mask) + ") at " + site(where);
    };
    if (!(mask >> lane & 1u)) fail_here("warp collective: " + who(t) + " calls " + what() + ", a mask without its own lane " + std::to_string(lane));
    if (width < 1 || width > 32 || (width & (width - 1)) != 0)
        fail_here("warp collective: " + who(t) + " calls " + what() + " with width " + std::to_string(width) + " (a power of two up to 32)");
    for (int b = 0; b < 32; ++b) {
        if (!(mask >> b & 1u)) continue;
        if (base + b >= n)
            fail_here("warp collective: " + who(t) + " calls " + what() + ", naming lane " + std::to_string(b) +
                      ", which a block of " + std::to_string(n) + " threads does not have");
        if (lanes_[std::size_t(base + b)].state == State::exited)
            fail_here("warp collective: " + who(t) + " calls " + what() + ", naming lane " + std::to_string(b) +
                      ", which has exited");
    }
    me.call = Call{kind, mask, arg, width, value, 0, where};
    me.state = State::in_collective;
    bool complete = true;
    for (int b = 0; b < 32; ++b) {
        if (!(mask >> b & 1u)) continue;
        const Lane& o = lanes_[std::size_t(base + b)];
        if (o.state != State::in_collective) {
            complete = false;
            continue;
        }
        if (o.call.kind == kind && o.call.mask == mask && o.call.width == width) continue;
        // Two lanes that wait for each other in different calls can never both go on. A lane
        // in another call that does not name this one (a __syncwarp of its half-warp) may
        // still come here once that call completes, as on Volta and later.
        if (o.call.mask >> lane & 1u)
            fail_here("warp collective: " + who(t) + " calls " + what() + " while lane " + std::to_string(b) +
                      " of its warp calls " + collective_name(o.call.kind) + " (mask " + hex(o.call.mask) +
                      ") at " + site(o.call.where));
        complete = false;
    }
    if (complete) {
        ++collectives_;
        shared_.collective(base, mask);
        unsigned ballot = 0;
        for (int b = 0; b < 32; ++b)
            if ((mask >> b & 1u) && lanes_[std::size_t(base + b)].call.value != 0) ballot |= 1u << b;
        for (int b = 0; b < 32; ++b) {
            if (!(mask >> b & 1u)) continue;
            Call& c = lanes_[std::size_t(base + b)].call;
            const int seg = b & ~(width - 1);
            int src = b;
            switch (kind) {
            case Collective::shfl_idx: src = seg + (arg & (width - 1)); break;
            case Collective::shfl_up: src = b - arg >= seg ? b - arg : b; break;
            case Collective::shfl_down: src = b + arg < seg + width ? b + arg : b; break;
            case Collective::shfl_xor: src = (b ^ arg) < seg + width ? (b ^ arg) : b; break;
            case Collective::ballot: c.result = ballot; break;
            case Collective::any: c.result = ballot != 0; break;
            case Collective::all: c.result = ballot == mask; break;
            case Collective::syncwarp: break;
            }
            if (kind == Collective::shfl_idx || kind == Collective::shfl_up || kind == Collective::shfl_down ||
                kind == Collective::shfl_xor) {
                if (src < 0 || src > 31 || !(mask >> src & 1u))
                    fail_here("warp collective: lane " + std::to_string(b) + " of " + who(t) + "'s warp reads lane " +
                              std::to_string(src) + " in " + what() + ", a lane outside the mask");
                c.result = lanes_[std::size_t(base + src)].call.value;
            }
        }
        for (int b = 0; b < 32; ++b)
            if (mask >> b & 1u) make_runnable(base + b);
    }
    switch_out();
    return me.call.result;
}

void BlockRun::fault(ThreadState& /*me*/, cudaError_t error, std::string why)
{
    if (!failed_) error_ = error;
    fail_here(std::move(why));
}

void BlockRun::scheduling_point(ThreadState& t)
{
    if (seed_ == 0 || (next_random() & 1u) == 0) return;
    make_runnable(t.linear);
    switch_out();
}

std::string BlockRun::describe_stuck() const
{
    std::ostringstream o;
    if (arrived_ > 0) o << arrived_ << " threads wait at __syncthreads at " << site(barrier_where_) << "; ";
    // Collective waiters, per warp and call.
    std::map<std::pair<int, std::string>, unsigned> waiting;
    for (const Lane& l : lanes_) {
        if (l.state != State::in_collective) continue;
        const std::string what = std::string(collective_name(l.call.kind)) + " (mask " + hex(l.call.mask) +
                                 ") at " + site(l.call.where);
        waiting[{l.ts.linear >> 5, what}] |= 1u << (l.ts.linear & 31);
    }
    for (const auto& [key, lanes] : waiting)
        o << "warp " << key.first << " lanes " << lane_list(lanes) << " wait in " << key.second << "; ";
    o << live_ << " of " << lanes_.size() << " threads live";
    return o.str();
}

}  // namespace jsonlw::emu
