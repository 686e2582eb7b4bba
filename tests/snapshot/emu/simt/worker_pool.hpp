// The OS threads that run a grid's blocks beside the launching (stream) thread. One grid at a
// time uses them (run_grid holds the executor's grid lock). Process-wide; threads start on
// first use and are joined at exit.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace jsonlw::emu {

class WorkerPool {
public:
    static WorkerPool& instance();
    ~WorkerPool();

    // Runs job on `helpers` pool threads and on the caller; returns when all have returned.
    void run(int helpers, const std::function<void()>& job);

private:
    WorkerPool() = default;
    void loop();

    std::mutex m_;
    std::condition_variable wake_, done_;
    std::vector<std::thread> threads_;
    const std::function<void()>* job_ = nullptr;
    int tickets_ = 0;  // helpers still to start the current job
    int running_ = 0;  // helpers in the current job
    bool stop_ = false;
};

}  // namespace jsonlw::emu
