#include "thread_stats.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace jsonlw::tools {

std::vector<ThreadStat> read_thread_stats()
{
    std::vector<ThreadStat> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/task", ec)) {
        ThreadStat t;
        try {
            t.tid = std::stoi(e.path().filename().string());
        } catch (...) {
            continue;
        }
        std::ifstream comm(e.path() / "comm");
        std::getline(comm, t.name);
        std::ifstream sched(e.path() / "schedstat");  // ns on CPU, ns waiting, timeslices
        std::uint64_t run_ns = 0, wait_ns = 0;
        if (sched >> run_ns >> wait_ns) {
            t.cpu_s = double(run_ns) / 1e9;
            t.runqueue_s = double(wait_ns) / 1e9;
        }
        std::ifstream status(e.path() / "status");
        for (std::string line; std::getline(status, line);) {
            std::istringstream in(line);
            std::string key;
            in >> key;
            if (key == "voluntary_ctxt_switches:") in >> t.voluntary;
            else if (key == "nonvoluntary_ctxt_switches:") in >> t.involuntary;
        }
        out.push_back(std::move(t));
    }
    std::sort(out.begin(), out.end(), [](const ThreadStat& a, const ThreadStat& b) {
        return a.name != b.name ? a.name < b.name : a.tid < b.tid;
    });
    return out;
}

void print_thread_stats(std::FILE* out, const std::vector<ThreadStat>& stats)
{
    struct Sum {
        int threads = 0;
        ThreadStat t;
    };
    std::map<std::string, Sum> by_name;
    for (const ThreadStat& t : stats) {
        Sum& s = by_name[t.name];
        ++s.threads;
        s.t.cpu_s += t.cpu_s;
        s.t.runqueue_s += t.runqueue_s;
        s.t.voluntary += t.voluntary;
        s.t.involuntary += t.involuntary;
    }
    std::fprintf(out, "%-16s %7s %8s %12s %11s %12s %14s\n", "thread", "threads", "cpu s",
                 "run-queue s", "wait/cpu", "voluntary", "involuntary");
    for (const auto& [name, s] : by_name)
        std::fprintf(out, "%-16s %7d %8.2f %12.2f %11.2f %12llu %14llu\n", name.c_str(), s.threads,
                     s.t.cpu_s, s.t.runqueue_s, s.t.cpu_s > 0 ? s.t.runqueue_s / s.t.cpu_s : 0.0,
                     (unsigned long long)s.t.voluntary, (unsigned long long)s.t.involuntary);
}

}  // namespace jsonlw::tools
