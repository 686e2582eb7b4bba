// SeamFileIo: a jsonlw::FileIo that passes every call through to POSIX and on request
//   - counts open/writev/fsync/close calls and records each writev (bytes, lines, result,
//     thread),
//   - fails writev or fsync with a chosen errno (ENOSPC, EIO, ...) a number of times,
//   - fails one writev with EINTR, or makes one writev short (writes only part of its bytes),
//   - holds writev and/or fsync calls (the thread blocks inside the call) until release().
// A test that holds calls must release() before its writer is destroyed: declare a
// ReleaseOnExit after the writer, so unwinding from a failed REQUIRE releases first.
#pragma once

#include <jsonlw/file_io.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace jsonlw_test {

class SeamFileIo : public jsonlw::FileIo {
public:
    struct WritevCall {
        std::size_t bytes = 0;  // bytes the caller asked to write
        std::size_t lines = 0;  // '\n' among them
        ssize_t result = 0;     // what the call returned
        int error = 0;          // errno when result < 0
        std::thread::id thread;
        std::string data;       // the bytes the caller asked to write
    };

    // --- fault injection (call before or while the writer runs) ---
    void fail_writev(int err, int times = 1) { plan_failures(writev_, err, times); }  // times < 0: every call
    void fail_fsync(int err, int times = 1) { plan_failures(fsync_, err, times); }
    void eintr_once() { eintr_once_.store(true); }
    // The next `times` ftruncate calls (a failed append's cut-back) fail with `err`: the torn
    // bytes stay in the file (a file the sink cannot shorten, say a character device).
    void fail_ftruncate(int err, int times = 1) { plan_failures(ftruncate_, err, times); }
    // The next writev writes only the first half of its bytes; with `then_errno`, the writev
    // after it fails with that errno (a disk that fills up in the middle of a batch).
    void short_write_once(int then_errno = 0)
    {
        std::lock_guard lock(mutex_);
        after_short_errno_ = then_errno;
        short_once_.store(true);
    }

    // --- holding calls ---
    void hold_writev() { hold(writev_); }
    void hold_fsync() { hold(fsync_); }
    // Lets every held call go and stops holding new ones. Idempotent.
    void release()
    {
        {
            std::lock_guard lock(mutex_);
            writev_.hold = fsync_.hold = false;
        }
        cv_.notify_all();
    }
    // Waits (at most `timeout`) until `n` writev calls are parked inside the seam.
    bool wait_writev_held(int n = 1, std::chrono::milliseconds timeout = std::chrono::seconds(20))
    {
        return wait_held(writev_, n, timeout);
    }
    bool wait_fsync_held(int n = 1, std::chrono::milliseconds timeout = std::chrono::seconds(20))
    {
        return wait_held(fsync_, n, timeout);
    }

    // Runs inside every writev, on the calling thread, before anything else.
    void on_writev(std::function<void()> hook)
    {
        std::lock_guard lock(mutex_);
        on_writev_ = std::move(hook);
    }

    // --- observations ---
    std::vector<WritevCall> writev_calls() const
    {
        std::lock_guard lock(mutex_);
        return calls_;
    }
    // The writev calls that succeeded, as their line counts.
    std::vector<std::size_t> successful_write_lines() const
    {
        std::vector<std::size_t> out;
        for (const auto& c : writev_calls())
            if (c.result >= 0) out.push_back(c.lines);
        return out;
    }
    int writev_count() const { return writev_count_.load(); }
    int writev_returned() const { return writev_returned_.load(); }
    int fsync_count() const { return fsync_count_.load(); }
    int fsync_returned() const { return fsync_returned_.load(); }
    int open_count() const { return open_count_.load(); }
    int close_count() const { return close_count_.load(); }

    // --- jsonlw::FileIo ---
    int open(const char* path, int flags, mode_t mode) noexcept override
    {
        ++open_count_;
        return FileIo::open(path, flags, mode);
    }

    ssize_t writev(int fd, const iovec* iov, int iovcnt) noexcept override
    {
        ++writev_count_;
        WritevCall call;
        call.thread = std::this_thread::get_id();
        for (int i = 0; i < iovcnt; ++i) {
            const auto* p = static_cast<const char*>(iov[i].iov_base);
            call.data.append(p, iov[i].iov_len);
        }
        call.bytes = call.data.size();
        call.lines = static_cast<std::size_t>(std::count(call.data.begin(), call.data.end(), '\n'));

        int err = 0;
        {
            std::unique_lock lock(mutex_);
            if (on_writev_) on_writev_();
            err = pass_locked(lock, writev_);
        }
        ssize_t r;
        if (err == 0 && eintr_once_.exchange(false)) err = EINTR;
        if (err != 0) {
            r = -1;
        } else if (call.bytes > 1 && short_once_.exchange(false)) {
            // Write only the first half of the bytes, for real, and report that.
            const std::size_t half = call.bytes / 2;
            iovec one{const_cast<char*>(call.data.data()), half};
            r = FileIo::writev(fd, &one, 1);
            if (r < 0) err = errno;
            std::lock_guard lock(mutex_);
            if (after_short_errno_ != 0) {
                writev_.error = after_short_errno_;
                writev_.failures_left = 1;
                after_short_errno_ = 0;
            }
        } else {
            r = FileIo::writev(fd, iov, iovcnt);
            if (r < 0) err = errno;
        }
        call.result = r;
        call.error = err;
        {
            std::lock_guard lock(mutex_);
            calls_.push_back(std::move(call));
        }
        ++writev_returned_;
        errno = err;
        return r;
    }

    int fsync(int fd) noexcept override
    {
        ++fsync_count_;
        int err = 0;
        {
            std::unique_lock lock(mutex_);
            err = pass_locked(lock, fsync_);
        }
        int r;
        if (err != 0) {
            r = -1;
        } else {
            r = FileIo::fsync(fd);
            if (r < 0) err = errno;
        }
        ++fsync_returned_;
        errno = err;
        return r;
    }

    int close(int fd) noexcept override
    {
        ++close_count_;
        return FileIo::close(fd);
    }

    int ftruncate(int fd, off_t length) noexcept override
    {
        ++ftruncate_count_;
        {
            std::unique_lock lock(mutex_);
            if (const int err = pass_locked(lock, ftruncate_)) {
                errno = err;
                return -1;
            }
        }
        return FileIo::ftruncate(fd, length);
    }
    int ftruncate_count() const { return ftruncate_count_.load(); }

private:
    // What the test planned for one kind of call (writev, fsync, ftruncate): whether calls are
    // held, how many are parked now, and the failures still to come.
    struct CallPlan {
        bool hold = false;
        int waiting = 0;
        int error = 0;          // the errno of a planned failure
        int failures_left = 0;  // < 0: every call
    };

    void plan_failures(CallPlan& plan, int err, int times)
    {
        std::lock_guard lock(mutex_);
        plan.error = err;
        plan.failures_left = times;
    }
    void hold(CallPlan& plan)
    {
        std::lock_guard lock(mutex_);
        plan.hold = true;
    }
    bool wait_held(const CallPlan& plan, int n, std::chrono::milliseconds timeout)
    {
        std::unique_lock lock(mutex_);
        return cv_.wait_for(lock, timeout, [&] { return plan.waiting >= n; });
    }
    // Inside a call: parks it while the plan holds calls, then takes the next planned failure.
    // The errno the call is to fail with, or 0.
    int pass_locked(std::unique_lock<std::mutex>& lock, CallPlan& plan)
    {
        if (plan.hold) {
            ++plan.waiting;
            cv_.notify_all();
            cv_.wait(lock, [&] { return !plan.hold; });
            --plan.waiting;
        }
        if (plan.failures_left == 0) return 0;
        if (plan.failures_left > 0) --plan.failures_left;
        return plan.error;
    }

    mutable std::mutex mutex_;
    std::condition_variable cv_;
    CallPlan writev_, fsync_, ftruncate_;
    int after_short_errno_ = 0;
    std::function<void()> on_writev_;
    std::vector<WritevCall> calls_;
    std::atomic<bool> eintr_once_{false};
    std::atomic<bool> short_once_{false};
    std::atomic<int> writev_count_{0};
    std::atomic<int> writev_returned_{0};
    std::atomic<int> fsync_count_{0};
    std::atomic<int> fsync_returned_{0};
    std::atomic<int> open_count_{0};
    std::atomic<int> close_count_{0};
    std::atomic<int> ftruncate_count_{0};
};

// Releases a seam when it goes out of scope. Declare it after the writer, so that it runs
// first (also when a failed REQUIRE unwinds the test).
class ReleaseOnExit {
public:
    explicit ReleaseOnExit(std::shared_ptr<SeamFileIo> seam) : seam_(std::move(seam)) {}
    ReleaseOnExit(const ReleaseOnExit&) = delete;
    ReleaseOnExit& operator=(const ReleaseOnExit&) = delete;
    ~ReleaseOnExit() { seam_->release(); }

private:
    std::shared_ptr<SeamFileIo> seam_;
};

}  // namespace jsonlw_test
