#include "fault_trap.hpp"

#include "block_run.hpp"
#include "fiber_stacks.hpp"

#include <jsonlw_emu/runtime_hooks.hpp>

#include <signal.h>
#include <ucontext.h>

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <sstream>

namespace jsonlw::emu {

namespace {

thread_local sigjmp_buf* t_jump = nullptr;
thread_local const void* t_address = nullptr;
thread_local bool t_write = false;
thread_local bool t_general = false;  // a general-protection fault: no address to report
thread_local bool t_altstack = false;

std::mutex g_install_mutex;
struct sigaction g_previous[2];  // SIGSEGV, SIGBUS

void on_fault(int sig, siginfo_t* info, void* uc)
{
    if (t_jump) {
        t_address = info->si_addr;
        t_general = info->si_code == SI_KERNEL;
#if defined(__x86_64__)
        // Page-fault error code bit 1: the access was a write.
        t_write = (static_cast<ucontext_t*>(uc)->uc_mcontext.gregs[REG_ERR] & 2) != 0;
#else
        t_write = false;
#endif
        sigjmp_buf* j = t_jump;
        t_jump = nullptr;
        siglongjmp(*j, sig);
    }
    // Not a kernel's fault: whoever handled it before us.
    const struct sigaction& prev = g_previous[sig == SIGSEGV ? 0 : 1];
    if (prev.sa_flags & SA_SIGINFO) {
        if (prev.sa_sigaction) {
            prev.sa_sigaction(sig, info, uc);
            return;
        }
    } else if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
        prev.sa_handler(sig);
        return;
    }
    ::signal(sig, SIG_DFL);  // returning re-executes the access, which now ends the process
}

void install(int sig, struct sigaction& previous)
{
    struct sigaction cur {};
    ::sigaction(sig, nullptr, &cur);
    if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == &on_fault) return;
    struct sigaction sa {};
    sa.sa_sigaction = &on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, &previous);
}

}  // namespace

void FaultTrap::arm_this_thread()
{
    {
        std::lock_guard lock(g_install_mutex);
        install(SIGSEGV, g_previous[0]);
        install(SIGBUS, g_previous[1]);
    }
    if (!t_altstack) {
        stack_t cur{};
        ::sigaltstack(nullptr, &cur);
        if (cur.ss_flags & SS_DISABLE) {
            static thread_local char alt[64 * 1024];
            stack_t st{};
            st.ss_sp = alt;
            st.ss_size = sizeof alt;
            ::sigaltstack(&st, nullptr);
        }
        t_altstack = true;
    }
}

void FaultTrap::set_jump(sigjmp_buf* jump) noexcept { t_jump = jump; }
const void* FaultTrap::fault_address() noexcept { return t_address; }
bool FaultTrap::fault_was_write() noexcept { return t_write; }
bool FaultTrap::fault_was_misaligned() noexcept { return t_general; }

std::string FaultTrap::describe(const ThreadState* who, const FiberStacks& stacks)
{
    std::ostringstream o;
    if (t_general) {
        // x86-64 raises #GP, not a page fault, for an aligned-only vector access (a uint4 load)
        // off its 16-byte grid: what a GPU reports as a misaligned address.
        o << "memcheck: misaligned access (a vector load or store off its alignment grid)";
        if (who) o << " by " << BlockRun::who(*who);
        return o.str();
    }
    const auto addr = reinterpret_cast<std::uintptr_t>(t_address);
    o << "memcheck: invalid " << (t_write ? "write" : "read") << " at 0x" << std::hex << addr << std::dec;
    if (who) o << " by " << BlockRun::who(*who);
    if (stacks.is_guard(t_address)) {
        o << ": the GPU thread overflowed its " << FiberStacks::stack_bytes / 1024 << " KiB stack";
        return o.str();
    }
    const AllocationInfo a = find_allocation(t_address);
    if (!a.found) {
        o << ": not in or next to any device allocation";
        return o.str();
    }
    const auto base = reinterpret_cast<std::uintptr_t>(a.base);
    if (addr >= base + a.size)
        o << ": " << (addr - (base + a.size)) << " bytes after the end of";
    else if (addr < base)
        o << ": " << (base - addr) << " bytes before the start of";
    else
        o << ": inside";
    o << " the " << a.size << "-byte device allocation at 0x" << std::hex << base;
    return o.str();
}

}  // namespace jsonlw::emu
