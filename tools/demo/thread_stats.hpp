// Per-thread scheduling figures of this process, read from Linux's /proc/self/task: how much
// CPU each thread got, how long it sat runnable in a run queue without getting a CPU, and how
// often it gave the CPU up (voluntary) or had it taken (involuntary). `jsonlw demo
// --thread-stats` prints them to show which threads lose the CPU under load. Any thread may
// call these; nothing is kept between calls.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace jsonlw::tools {

struct ThreadStat {
    int tid = 0;
    std::string name;                 // /proc/self/task/TID/comm
    double cpu_s = 0;                 // schedstat: time on a CPU
    double runqueue_s = 0;            // schedstat: time runnable but waiting for a CPU
    std::uint64_t voluntary = 0;      // status: voluntary_ctxt_switches
    std::uint64_t involuntary = 0;    // status: nonvoluntary_ctxt_switches
};

// Every thread of this process now, by name then tid; empty where /proc is not there.
std::vector<ThreadStat> read_thread_stats();

// Threads of the same name summed ("jsonlw-rows-1" stays apart from "jsonlw-rows-2"), as a
// table: name, threads, cpu s, run-queue s, run-queue wait per CPU second, switches.
void print_thread_stats(std::FILE* out, const std::vector<ThreadStat>& stats);

}  // namespace jsonlw::tools
