// What this machine gives two threads at once (docs/benchmarks.md, "What limits the cells
// that miss their goals"): on a VM whose two vCPUs may share one physical core for minutes,
// every cell in which a producer and the I/O thread both run is slowed, and a one-thread
// baseline (fprintf + mutex) is not.
#pragma once

namespace bench {

// Each of two threads' speed on the same arithmetic loop, run at once, as a share of one
// thread's alone (median of three tries, ~0.5 s in all): ~1.0 with two free cores, ~0.5
// when they share one. Called with no other thread of this process running.
double two_thread_share();

}  // namespace bench
