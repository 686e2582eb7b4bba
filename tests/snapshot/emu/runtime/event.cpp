// Events (CUDA runtime API docs, "Event Management"): a record queues a marker in the stream;
// the event is complete once the stream has passed it, and an event never recorded is
// complete. cudaStreamWaitEvent makes a stream's later work wait for the recorded point.
#include "device_state.hpp"

namespace jsonlw::emu::detail {
namespace {

CUevent_st* find_locked(cudaEvent_t e)
{
    Device& d = device();
    return d.events.contains(e) ? e : nullptr;
}

bool complete_locked(const CUevent_st& e) noexcept { return !e.point || done_locked(e.point->at); }

}  // namespace
}  // namespace jsonlw::emu::detail

using namespace jsonlw::emu::detail;

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags)
{
    if (const cudaError_t e = enter()) return e;
    constexpr unsigned known = cudaEventBlockingSync | cudaEventDisableTiming;
    if (!event || (flags & ~known)) return fail(cudaErrorInvalidValue);
    auto ev = std::make_unique<CUevent_st>();
    ev->flags = flags;
    Device& d = device();
    std::lock_guard lock(d.mu);
    *event = ev.get();
    d.events.emplace(ev.get(), std::move(ev));
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) { return cudaEventCreateWithFlags(event, cudaEventDefault); }

// As cudart: a pending record still completes (the marker is the stream's, not the event's).
cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    if (const cudaError_t e = gate()) return e;
    Device& d = device();
    {
        std::lock_guard lock(d.mu);
        if (!d.events.erase(event)) return fail(cudaErrorInvalidResourceHandle);
    }
    return sticky_result();
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    if (const cudaError_t e = enter()) return e;
    Device& d = device();
    std::lock_guard lock(d.mu);
    CUevent_st* ev = find_locked(event);
    const auto s = resolve_locked(stream);
    if (!ev || !s) return fail(cudaErrorInvalidResourceHandle);
    auto point = std::make_shared<Point>();
    Item item;
    item.work = [point] {
        point->time = Clock::now();
        return cudaSuccess;
    };
    point->at = Dep{s, enqueue_locked(s, std::move(item))};
    ev->point = std::move(point);
    return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event)
{
    if (const cudaError_t e = enter()) return e;
    Device& d = device();
    std::lock_guard lock(d.mu);
    const CUevent_st* ev = find_locked(event);
    if (!ev) return fail(cudaErrorInvalidResourceHandle);
    return complete_locked(*ev) ? cudaSuccess : cudaErrorNotReady;  // not ready: not an error
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    if (const cudaError_t e = gate()) return e;
    Device& d = device();
    std::unique_lock lock(d.mu);
    const CUevent_st* ev = find_locked(event);
    if (!ev) return fail(cudaErrorInvalidResourceHandle);
    if (const auto point = ev->point) wait_locked(lock, point->at);  // ev may go meanwhile
    return fail(d.sticky);
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end)
{
    if (const cudaError_t e = enter()) return e;
    if (!ms) return fail(cudaErrorInvalidValue);
    Device& d = device();
    std::lock_guard lock(d.mu);
    const CUevent_st* a = find_locked(start);
    const CUevent_st* b = find_locked(end);
    if (!a || !b || !a->point || !b->point || ((a->flags | b->flags) & cudaEventDisableTiming))
        return fail(cudaErrorInvalidResourceHandle);
    if (!complete_locked(*a) || !complete_locked(*b)) return fail(cudaErrorNotReady);
    *ms = std::chrono::duration<float, std::milli>(b->point->time - a->point->time).count();
    return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
    if (const cudaError_t e = enter()) return e;
    if (flags != 0) return fail(cudaErrorInvalidValue);
    Device& d = device();
    std::lock_guard lock(d.mu);
    const CUevent_st* ev = find_locked(event);
    const auto s = resolve_locked(stream);
    if (!ev || !s) return fail(cudaErrorInvalidResourceHandle);
    if (!ev->point) return cudaSuccess;  // never recorded: nothing to wait for
    Item item;
    item.deps.push_back(ev->point->at);
    enqueue_locked(s, std::move(item));
    return cudaSuccess;
}
