#include "worker_pool.hpp"

namespace jsonlw::emu {

WorkerPool& WorkerPool::instance()
{
    static WorkerPool pool;
    return pool;
}

WorkerPool::~WorkerPool()
{
    {
        std::lock_guard lock(m_);
        stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
}

void WorkerPool::run(int helpers, const std::function<void()>& job)
{
    {
        std::unique_lock lock(m_);
        while (int(threads_.size()) < helpers) threads_.emplace_back([this] { loop(); });
        job_ = &job;
        tickets_ = helpers;
        running_ = helpers;
    }
    if (helpers > 0) wake_.notify_all();
    job();
    std::unique_lock lock(m_);
    done_.wait(lock, [this] { return running_ == 0; });
    job_ = nullptr;
}

void WorkerPool::loop()
{
    std::unique_lock lock(m_);
    for (;;) {
        wake_.wait(lock, [this] { return stop_ || tickets_ > 0; });
        if (stop_) return;
        --tickets_;
        const std::function<void()>* job = job_;
        lock.unlock();
        (*job)();
        lock.lock();
        if (--running_ == 0) done_.notify_all();
    }
}

}  // namespace jsonlw::emu
