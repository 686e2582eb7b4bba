// A bounded multi-producer multi-consumer ring (Vyukov's sequence-numbered cells) with a
// "closed" bit in the enqueue position, so closing is atomic with respect to every push.
#pragma once

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>

namespace jsonlw::detail {

inline constexpr std::size_t cache_line = 64;

// Asks for the line holding `p` in a state that can be written (PREFETCHW). GCC emits it for
// __builtin_prefetch(p, 1) only where -march includes PRFCHW, and otherwise a read prefetch,
// after which the store must still take the line from the core that read it last
// (docs/queue.md). x86-64 processors without the feature bit (Intel's before Broadwell) run
// it as a no-op — 64-bit Windows has required that of every processor since 8.1 — so it is
// emitted directly.
inline void prefetch_for_write(const void* p) noexcept
{
#if defined(__GNUC__) && defined(__x86_64__)
    asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
#elif defined(__GNUC__)
    __builtin_prefetch(p, 1, 3);
#else
    (void)p;
#endif
}

// The ring's two positions, whatever it holds: how many records were ever claimed (pushed)
// and consumed (popped), and the closed bit. The untyped engine (WriterCore, the drain,
// close) reads them through this base; any thread, lock-free.
class RingPositions {
public:
    static constexpr std::uint64_t closed_bit = std::uint64_t{1} << 63;

    // Closes the ring to pushes; returns how many pushes went in before it.
    std::uint64_t close() noexcept
    {
        return tail_.fetch_or(closed_bit, std::memory_order_seq_cst) & ~closed_bit;
    }
    bool closed() const noexcept { return tail_.load(std::memory_order_acquire) & closed_bit; }

    // Monotonic positions: pushes claimed (the closed bit masked) and pops done.
    std::uint64_t claimed() const noexcept
    {
        return tail_.load(std::memory_order_seq_cst) & ~closed_bit;
    }
    std::uint64_t consumed() const noexcept { return head_.load(std::memory_order_seq_cst); }
    // A producer, one push before it reads consumed() (the burst check): asks for the head's
    // line, which the consumer writes at every pop, so that the read finds it here instead
    // of waiting for the other core on the caller's time (docs/queue.md, "The tail").
    void prefetch_consumed() const noexcept
    {
#if defined(__GNUC__)
        __builtin_prefetch(&head_, 0, 3);
#endif
    }
    std::size_t size() const noexcept
    {
        const std::uint64_t h = consumed();
        const std::uint64_t t = claimed();
        return t > h ? static_cast<std::size_t>(t - h) : 0;
    }

    // The consumer's note that its last pop filled a batch — records were waiting beyond it —
    // for producers that can take work off it (JsonTextWriter validates a text itself then).
    // On a line of its own, stored only when it changes: a producer's read stays a cache hit.
    void note_backlog(bool behind) noexcept
    {
        if (backlog_.load(std::memory_order_relaxed) != behind)
            backlog_.store(behind, std::memory_order_relaxed);
    }
    bool backlogged() const noexcept { return backlog_.load(std::memory_order_relaxed); }

    // Whether the cell of position `p` holds the record pushed at `p` (published, not yet
    // popped), for p from consumed() to consumed() + capacity. The polling drain looks with it
    // instead of claimed(): a cell that holds its record is one its producer has finished
    // with, while claimed()'s line is the one every push writes next — each read of it costs
    // the next push a transfer of the line back from the reader's core (docs/queue.md).
    bool published(std::uint64_t p) const noexcept
    {
        const std::size_t i = view_.mask ? (p & view_.mask) : (p % view_.count);
        const auto* seq = reinterpret_cast<const std::atomic<std::uint64_t>*>(
            view_.base + i * view_.stride);
        return seq->load(std::memory_order_acquire) == p + 1;
    }

protected:
    RingPositions() = default;
    ~RingPositions() = default;

    alignas(cache_line) std::atomic<std::uint64_t> tail_{0};
    // The consumers' line: the head, and what the consumer reads ahead (warm_ahead()). The
    // line after it holds what producers read on every push: nothing on it may change.
    alignas(cache_line) std::atomic<std::uint64_t> head_{0};
    std::uint64_t warmed_ = 0;    // warm_ahead(): cells before this position were read
    std::uint64_t warm_sum_ = 0;  // warm_ahead(): what the reads returned (otherwise unused)
    char pad_[cache_line - 3 * sizeof(std::uint64_t)]{};
    alignas(cache_line) std::atomic<bool> backlog_{false};  // note_backlog()
    char backlog_pad_[cache_line - sizeof(std::atomic<bool>)]{};
    // The cells as published() sees them, set once by BoundedRing's constructor: each begins
    // with its sequence word, `stride` bytes apart.
    struct CellsView {
        const unsigned char* base = nullptr;
        std::size_t stride = 0;
        std::size_t count = 1;
        std::size_t mask = 0;  // count - 1 when that is a power of two, else 0
    } view_;
};

// Push is one CAS on the tail plus one release store; no lock, no allocation, no syscall.
// Consumers may be several (the drain, a drop_oldest producer evicting, close discarding).
template <class T>
class BoundedRing : public RingPositions {
    static_assert(std::is_nothrow_move_constructible_v<T>, "records must be nothrow-movable");

public:
    enum class Push { ok, full, closed };

    // Capacity 0 means 1. Sequence numbers need at least two cells to tell "published" from
    // "free for the next lap", so a one-record ring has two cells and checks its size.
    // `huge_pages`: a ring of populate_bytes or more asks for 2 MiB pages (see allocate()).
    explicit BoundedRing(std::size_t capacity, bool huge_pages = false)
        : capacity_(capacity == 0 ? 1 : capacity),
          cells_count_(capacity_ < 2 ? 2 : capacity_),
          mask_((cells_count_ & (cells_count_ - 1)) == 0 ? cells_count_ - 1 : 0),
          cells_(allocate(cells_count_, huge_pages))
    {
        for (std::size_t i = 0; i < cells_count_; ++i) {
            ::new (static_cast<void*>(&cells_[i])) Cell;  // the record's bytes left as they are
            cells_[i].seq.store(i, std::memory_order_relaxed);
        }
        view_ = {reinterpret_cast<const unsigned char*>(cells_.get()), sizeof(Cell), cells_count_,
                 mask_};
        // The init loop touched every page, but on a large ring the first pages' translations
        // are gone again by its end: have them ready for the first pushes.
        warm_ahead(0, warm_cells);
    }
    BoundedRing(const BoundedRing&) = delete;
    BoundedRing& operator=(const BoundedRing&) = delete;
    ~BoundedRing()
    {
        while (try_pop()) {}
    }

    std::size_t capacity() const noexcept { return capacity_; }

    // How many cells past the tail warm_ahead() keeps ready: 4 MiB of 512-byte cells, more
    // than a producer at a million records a second fills between two of the drain's polls.
    static constexpr std::size_t warm_cells = 8192;
    // Rings up to this size are not read ahead: their pages are revisited often enough to
    // stay warm (a 32 MiB ring measured no stall; a 1 GiB one a stall every 8th push).
    static constexpr std::size_t warm_above_bytes = std::size_t{64} << 20;

    // Consumer side (the I/O thread, under the consumer lock; the constructor): on a ring of
    // more than warm_above_bytes, reads one word in every page of the `cells` cells past
    // `from` (the tail, or the head when the consumer has just caught up: then they are the
    // same, and the head is the consumer's own line) that earlier calls have not read, so
    // that a push never is the first access to a page in a long while. A push into a page
    // untouched for a lap of a large ring cost 5-10 us on the machines measured (its
    // translation gone from the TLB and, under a hypervisor's shadow paging, from the host's
    // tables: no page fault the guest sees); any thread's read restores the second, and the
    // page-table lines the walk needs (docs/queue.md). Returns the pages read.
    std::size_t warm_ahead(std::uint64_t from, std::size_t cells) noexcept
    {
        if (cells_count_ * sizeof(Cell) <= warm_above_bytes) return 0;
        const std::uint64_t to = from + std::min<std::uint64_t>(cells, cells_count_);
        std::uint64_t p = warmed_ > from ? warmed_ : from;
        std::size_t pages = 0;
        std::uint64_t sum = 0;
        for (; p < to; p += cells_per_page, ++pages)
            sum += cell(p).seq.load(std::memory_order_relaxed);
        warmed_ = p;
        warm_sum_ = sum;  // kept, so the loads are not dropped
        return pages;
    }

    // On success, `pos` is the record's sequence number (0, 1, 2, ... in claim order).
    Push try_push(T& value, std::uint64_t& pos) noexcept
    {
        return try_push_with([&value](void* at) noexcept { ::new (at) T(std::move(value)); },
                             pos);
    }

    // Like try_push(), but make(storage) constructs the record in its cell (it must not
    // throw: the cell is claimed by then).
    template <class Make>
    Push try_push_with(Make&& make, std::uint64_t& pos) noexcept
    {
        std::uint64_t p = tail_.load(std::memory_order_relaxed);
        for (;;) {
            if (p & closed_bit) return Push::closed;
            Cell& c = cell(p);
            const std::uint64_t seq = c.seq.load(std::memory_order_acquire);
            if (seq == p) {
                if (capacity_ < cells_count_ &&
                    p - head_.load(std::memory_order_acquire) >= capacity_) [[unlikely]] {
                    const std::uint64_t now = tail_.load(std::memory_order_relaxed);
                    if (now == p) return Push::full;
                    p = now;
                    continue;
                }
                // seq_cst: the drain's park protocol orders this claim against its check.
                if (tail_.compare_exchange_weak(p, p + 1, std::memory_order_seq_cst,
                                                std::memory_order_relaxed)) {
                    make(static_cast<void*>(c.storage));
                    c.seq.store(p + 1, std::memory_order_release);
                    pos = p;
                    // The next push's cell was last read by the consumer a lap ago: ask for
                    // all its lines now, writable, so that the copy into it does not wait in
                    // the store buffer for them (one producer: ~20 % more records/s with
                    // validation on submit, docs/queue.md).
                    const char* next = reinterpret_cast<const char*>(&cell(p + 1));
                    for (std::size_t o = 0; o < sizeof(Cell); o += cache_line)
                        prefetch_for_write(next + o);
                    return Push::ok;
                }
            } else if (seq < p) {
                // The cell still holds the record of the previous lap: full, unless the
                // tail moved meanwhile (then retry with the fresh value).
                const std::uint64_t now = tail_.load(std::memory_order_relaxed);
                if (now == p) return Push::full;
                p = now;
            } else {
                p = tail_.load(std::memory_order_relaxed);
            }
        }
    }

    // Pops the oldest published record. An empty optional means empty, or that the oldest
    // claimed cell is still being written by its producer (it will be published shortly).
    std::optional<T> try_pop() noexcept
    {
        std::optional<T> out;
        try_pop_into([&](T&& v) noexcept { out.emplace(std::move(v)); });
        return out;
    }

    // Like try_pop(), but hands the record to `take(T&&)` — or `take(T&&, pos)`, with the
    // sequence number try_push() returned for it — (which must not throw) in its cell,
    // saving a move; returns whether there was one.
    template <class Take>
    bool try_pop_into(Take&& take) noexcept
    {
        std::uint64_t p = head_.load(std::memory_order_relaxed);
        for (;;) {
            Cell& c = cell(p);
            const std::uint64_t seq = c.seq.load(std::memory_order_acquire);
            if (seq == p + 1) {
                if (head_.compare_exchange_weak(p, p + 1, std::memory_order_seq_cst,
                                                std::memory_order_relaxed)) {
                    T* v = std::launder(reinterpret_cast<T*>(c.storage));
                    if constexpr (std::is_invocable_v<Take&, T&&, std::uint64_t>)
                        take(std::move(*v), p);
                    else
                        take(std::move(*v));
                    v->~T();
                    c.seq.store(p + cells_count_, std::memory_order_release);
                    return true;
                }
            } else if (seq < p + 1) {
                return false;
            } else {
                p = head_.load(std::memory_order_relaxed);
            }
        }
    }

private:
    // A cell per cache line (at least): the drain polling every idle_poll pops the cell just
    // behind the one a producer fills, and two cells on one line made each push a miss on
    // the line the other core had just written (false sharing).
    struct alignas(cache_line) Cell {  // trivially destructible: the ring destroys records
        std::atomic<std::uint64_t> seq;  // first: RingPositions::published() reads it there
        alignas(T) unsigned char storage[sizeof(T)];
    };
    static_assert(std::is_trivially_destructible_v<Cell>);
    static_assert(offsetof(Cell, seq) == 0);
    Cell& cell(std::uint64_t p) const noexcept
    {
        return cells_[mask_ ? (p & mask_) : (p % cells_count_)];
    }
    // Cells per 4 KiB page, rounded down: stepping by it reads every page at least once.
    static constexpr std::size_t cells_per_page = sizeof(Cell) < 4096 ? 4096 / sizeof(Cell) : 1;

    // The cells' memory, every page of it resident before the first push. A ring of
    // populate_bytes or more is mapped and made resident by one system call — in half the
    // time of faulting its pages in one by one (1 GiB: 1.3 s instead of 2.5 s with 4 KiB
    // pages) — or, with `huge_pages`, mapped at a 2 MiB boundary and given MADV_HUGEPAGE
    // before that call: where transparent huge pages are on ("madvise" or "always") 1 GiB is
    // then 512 pages, resident in 0.07–1.8 s depending on the host (docs/queue.md). Where
    // they are off, the pages are 4 KiB; where the kernel has no MADV_POPULATE_WRITE (before
    // 5.14), the MAP_POPULATE mapping is made instead. A smaller ring comes from operator new.
    static constexpr std::size_t populate_bytes = std::size_t{2} << 20;
    static constexpr std::size_t huge_page_bytes = std::size_t{2} << 20;
    struct Unmap {
        std::size_t bytes = 0;  // the mapping's length; 0: from operator new
        void operator()(Cell* c) const noexcept
        {
            if (bytes) ::munmap(static_cast<void*>(c), bytes);
            else ::operator delete(static_cast<void*>(c), std::align_val_t{alignof(Cell)});
        }
    };
    using Cells = std::unique_ptr<Cell[], Unmap>;
    static Cells allocate(std::size_t count, bool huge_pages)
    {
        if (count > SIZE_MAX / sizeof(Cell)) throw std::bad_array_new_length();
        const std::size_t bytes = count * sizeof(Cell);
        if (bytes >= populate_bytes) {
            if (huge_pages)
                if (Cells c = map_huge(bytes)) return c;
            void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
            if (m != MAP_FAILED) return Cells(static_cast<Cell*>(m), Unmap{bytes});
        }
        return Cells(static_cast<Cell*>(::operator new(bytes, std::align_val_t{alignof(Cell)})),
                     Unmap{0});
    }
    // `bytes` rounded up to whole 2 MiB pages, mapped at a 2 MiB boundary (a larger mapping
    // trimmed at both ends), MADV_HUGEPAGE, then every page made resident; null when a step
    // fails (the caller maps 4 KiB pages instead).
    static Cells map_huge(std::size_t bytes) noexcept
    {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
#if defined(MADV_POPULATE_WRITE)
        constexpr int populate_write = MADV_POPULATE_WRITE;
#else
        constexpr int populate_write = 23;  // linux/mman.h, since 5.14
#endif
        const std::size_t len = (bytes + huge_page_bytes - 1) / huge_page_bytes * huge_page_bytes;
        if (len < bytes || len + huge_page_bytes < len) return {};
        void* m = ::mmap(nullptr, len + huge_page_bytes, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) return {};
        const auto base = reinterpret_cast<std::uintptr_t>(m);
        const std::uintptr_t at = (base + huge_page_bytes - 1) & ~(huge_page_bytes - 1);
        if (at > base) ::munmap(m, at - base);
        if (const std::size_t after = base + len + huge_page_bytes - (at + len))
            ::munmap(reinterpret_cast<void*>(at + len), after);
        void* const a = reinterpret_cast<void*>(at);
        ::madvise(a, len, MADV_HUGEPAGE);  // fails only where the kernel has no THP at all
        if (::madvise(a, len, populate_write) != 0) {
            ::munmap(a, len);
            return {};
        }
        return Cells(static_cast<Cell*>(a), Unmap{len});
#else
        (void)bytes;
        return {};
#endif
    }

    const std::size_t capacity_;
    const std::size_t cells_count_;
    const std::size_t mask_;  // cells_count_ - 1 when that is a power of two, else 0
    Cells cells_;
};

}  // namespace jsonlw::detail
