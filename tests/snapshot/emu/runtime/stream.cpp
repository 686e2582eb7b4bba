// Streams: each an in-order queue run by its own thread (CUDA runtime API docs, "Stream
// Management"; CUDA programming guide, "Implicit Synchronization" and "Default Stream"). The
// legacy default stream waits for all earlier work of every blocking stream, and every
// blocking stream waits for all earlier work of the legacy stream; cudaStreamNonBlocking
// streams do neither. Kernel launches (enqueue_kernel) and host functions are queued here.
#include "device_state.hpp"

#include <jsonlw_emu/runtime_hooks.hpp>

#include <algorithm>
#include <system_error>
#include <thread>

namespace jsonlw::emu::detail {
namespace {

bool blocked_locked(const CUstream_st& s) noexcept
{
    const Item& front = s.queue.front();
    if (s.stalled && (s.stall_at == StallAt::next_item || front.host_func)) return true;
    return !std::all_of(front.deps.begin(), front.deps.end(), done_locked);
}

// The stream's thread: runs items in order; after a sticky error it skips their work (a failed
// context runs nothing more) but still completes them, so waits end and report the error.
void run(std::shared_ptr<CUstream_st> s)
{
    Device& d = device();
    std::unique_lock lock(d.mu);
    for (;;) {
        d.cv.wait(lock, [&] { return s->queue.empty() ? s->destroyed : !blocked_locked(*s); });
        if (s->queue.empty()) break;
        Item item = std::move(s->queue.front());
        s->queue.pop_front();
        if (item.work && d.sticky == cudaSuccess) {
            lock.unlock();
            const cudaError_t e = item.work();
            item.work = nullptr;  // its captures die outside the lock
            lock.lock();
            if (e != cudaSuccess && d.sticky == cudaSuccess) d.sticky = e;
        }
        s->completed = item.seq;
        d.cv.notify_all();
    }
    std::erase(d.running, s);
    d.cv.notify_all();
}

// Starts a stream and its thread; null when no thread could be started.
std::shared_ptr<CUstream_st> start_locked(unsigned flags, bool legacy)
{
    Device& d = device();
    auto s = std::make_shared<CUstream_st>();
    s->flags = flags;
    s->legacy = legacy;
    try {
        std::thread(run, s).detach();  // detached: a destroyed stream drains on its own
    } catch (const std::system_error&) {
        return nullptr;
    }
    d.running.push_back(s);
    return s;
}

}  // namespace

bool done_locked(const Dep& d) noexcept { return d.stream->completed >= d.seq; }

void wait_locked(std::unique_lock<std::mutex>& lock, const Dep& dep)
{
    device().cv.wait(lock, [&] { return done_locked(dep); });
}

std::shared_ptr<CUstream_st> resolve_locked(cudaStream_t handle)
{
    Device& d = device();
    if (handle == nullptr || handle == cudaStreamLegacy) {
        if (!d.legacy) d.legacy = start_locked(cudaStreamDefault, true);
        return d.legacy;
    }
    const auto it = d.streams.find(handle);
    return it == d.streams.end() ? nullptr : it->second;
}

std::uint64_t enqueue_locked(const std::shared_ptr<CUstream_st>& s, Item item)
{
    Device& d = device();
    const auto pending = [](const std::shared_ptr<CUstream_st>& o) { return o->completed < o->enqueued; };
    if (s->legacy) {
        for (const auto& o : d.running)
            if (!o->legacy && !(o->flags & cudaStreamNonBlocking) && pending(o))
                item.deps.push_back(Dep{o, o->enqueued});
    } else if (!(s->flags & cudaStreamNonBlocking) && d.legacy && pending(d.legacy)) {
        item.deps.push_back(Dep{d.legacy, d.legacy->enqueued});
    }
    item.seq = ++s->enqueued;
    s->queue.push_back(std::move(item));
    d.cv.notify_all();
    return s->enqueued;
}

}  // namespace jsonlw::emu::detail

using namespace jsonlw::emu::detail;

cudaError_t jsonlw::emu::enqueue_kernel(cudaStream_t stream, KernelWork work) noexcept
{
    if (const cudaError_t e = enter()) return e;
    Device& d = device();
    std::lock_guard lock(d.mu);
    if (const cudaError_t e = std::exchange(d.next_launch, cudaSuccess)) return fail(e);
    const auto s = resolve_locked(stream);
    if (!s) return fail(cudaErrorInvalidResourceHandle);
    if (const cudaError_t e = std::exchange(d.next_kernel, cudaSuccess))
        work = [e] { return e; };
    Item item;
    item.work = std::move(work);
    enqueue_locked(s, std::move(item));
    return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags)
{
    if (const cudaError_t e = enter()) return e;
    if (!pStream || (flags & ~unsigned(cudaStreamNonBlocking))) return fail(cudaErrorInvalidValue);
    Device& d = device();
    std::lock_guard lock(d.mu);
    const auto s = start_locked(flags, false);
    if (!s) return fail(cudaErrorMemoryAllocation);
    s->stalled = d.stall_new;
    s->stall_at = d.stall_new_at;
    d.streams.emplace(s.get(), s);
    d.last_created = s.get();
    *pStream = s.get();
    return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t* pStream)
{
    return cudaStreamCreateWithFlags(pStream, cudaStreamDefault);
}

// As cudart: returns at once; the stream's queued work still runs, then its thread ends.
cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    if (const cudaError_t e = gate()) return e;
    Device& d = device();
    {
        std::lock_guard lock(d.mu);
        const auto it = d.streams.find(stream);
        if (it == d.streams.end()) return fail(cudaErrorInvalidResourceHandle);
        it->second->destroyed = true;
        if (d.last_created == stream) d.last_created = nullptr;
        d.streams.erase(it);
        d.cv.notify_all();
    }
    return sticky_result();
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    if (const cudaError_t e = gate()) return e;
    Device& d = device();
    std::unique_lock lock(d.mu);
    const auto s = resolve_locked(stream);
    if (!s) return fail(cudaErrorInvalidResourceHandle);
    wait_locked(lock, Dep{s, s->enqueued});
    return fail(d.sticky);
}

cudaError_t cudaStreamQuery(cudaStream_t stream)
{
    if (const cudaError_t e = enter()) return e;
    Device& d = device();
    std::lock_guard lock(d.mu);
    const auto s = resolve_locked(stream);
    if (!s) return fail(cudaErrorInvalidResourceHandle);
    return s->completed < s->enqueued ? cudaErrorNotReady : cudaSuccess;  // not recorded: not an error
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* userData)
{
    if (const cudaError_t e = enter()) return e;
    if (!fn) return fail(cudaErrorInvalidValue);
    Device& d = device();
    std::lock_guard lock(d.mu);
    const auto s = resolve_locked(stream);
    if (!s) return fail(cudaErrorInvalidResourceHandle);
    Item item;
    item.host_func = true;
    item.work = [fn, userData] {
        set_in_host_func(true);  // CUDA calls from it fail with cudaErrorNotPermitted
        fn(userData);
        set_in_host_func(false);
        return cudaSuccess;
    };
    enqueue_locked(s, std::move(item));
    return cudaSuccess;
}
