#include "csp/detail/stack_guard.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "csp/detail/process_record.hpp"

namespace csp::detail::stack_guard {

namespace {

constexpr std::size_t signal_stack_size = 64 * 1024;

// ---- the budget of guarded stacks ----

std::size_t budget() noexcept {
    static const std::size_t b = [] {
        std::size_t maps = 65530;  // Linux's default
        if (std::FILE* f = std::fopen("/proc/sys/vm/max_map_count", "r")) {
            unsigned long v = 0;
            if (std::fscanf(f, "%lu", &v) == 1 && v > 0) maps = v;
            std::fclose(f);
        }
        return maps / 4;
    }();
    return b;
}

std::atomic<std::size_t> guarded{0};
std::atomic<bool> said_no{false};  // one line on stderr when a stack gets no guard

// ---- the registry the fault handler reads ----
//
// A slot is claimed by moving its base from 0 to `claimed`, filled, then
// published by storing the real base (release); the handler reads the base
// first (acquire). Only async-signal-safe work happens on the handler's side.

constexpr std::uintptr_t claimed = 1;
constexpr std::size_t max_regions = 4096;

struct region {
    std::atomic<std::uintptr_t> base{0};
    std::atomic<std::size_t> length{0};
    std::atomic<std::size_t> stride{0};
};
region regions[max_regions];

struct sigaction previous {};

// ---- the report, written without allocating ----

class line {
public:
    void add(const char* s, std::size_t n) noexcept {
        n = std::min(n, sizeof buf_ - used_);
        std::memcpy(buf_ + used_, s, n);
        used_ += n;
    }
    void add(const char* s) noexcept { add(s, std::strlen(s)); }
    void add(std::uintmax_t v, unsigned base = 10) noexcept {
        char digits[32];
        std::size_t n = 0;
        do {
            digits[n++] = "0123456789abcdef"[v % base];
            v /= base;
        } while (v != 0);
        while (n > 0) add(&digits[--n], 1);
    }
    void write() const noexcept {
        std::size_t done = 0;
        while (done < used_) {
            const ssize_t w = ::write(STDERR_FILENO, buf_ + done, used_ - done);
            if (w <= 0) return;
            done += static_cast<std::size_t>(w);
        }
    }

private:
    char buf_[1024];
    std::size_t used_ = 0;
};

// process_record::label() without its strings.
void add_label(line& out, const process_record* p, int depth) noexcept {
    if (!p->given_name().empty()) {
        out.add(p->given_name().data(), p->given_name().size());
    } else if (p->parent() == nullptr) {
        out.add("main");
    } else if (depth > 32) {
        out.add("...");
    } else {
        add_label(out, p->parent(), depth + 1);
        out.add(".");
        out.add(p->index());
    }
}

void report(std::uintptr_t stack_bottom, std::size_t stack_size, std::uintptr_t fault) noexcept {
    line out;
    out.add("csp: ");
    // The process is named only if it is the one running on this stack: its
    // record lives in its own entry frame (spawn.hpp).
    const process_record* p = current_process();
    const auto at = reinterpret_cast<std::uintptr_t>(p);
    if (p != nullptr && at >= stack_bottom && at < stack_bottom + stack_size) {
        out.add("process '");
        add_label(out, p, 0);
        out.add("'");
        if (p->made_at.line() != 0) {
            out.add(" (started at ");
            out.add(p->made_at.file_name());
            out.add(":");
            out.add(p->made_at.line());
            out.add(")");
        }
    } else {
        out.add("a process");
    }
    out.add(" overflowed its ");
    out.add(stack_size);
    out.add("-byte stack: it reached the guard page below it (fault at 0x");
    out.add(fault, 16);
    out.add("); give it more with runtime_options::stack_size\n");
    out.write();
}

// Hands the fault to whoever handled SIGSEGV before. A default (or ignored)
// action is put back and the fault left to repeat when this returns, so the
// program dies of it as it would have.
void pass_on(int sig, siginfo_t* info, void* context) noexcept {
    if (previous.sa_flags & SA_SIGINFO) {
        previous.sa_sigaction(sig, info, context);
    } else if (previous.sa_handler == SIG_DFL || previous.sa_handler == SIG_IGN) {
        struct sigaction fallback {};
        fallback.sa_handler = SIG_DFL;
        ::sigaction(sig, &fallback, nullptr);
    } else {
        previous.sa_handler(sig);
    }
}

void on_fault(int sig, siginfo_t* info, void* context) {
    const auto fault = reinterpret_cast<std::uintptr_t>(info->si_addr);
    const std::size_t page = page_size();
    for (const region& r : regions) {
        const std::uintptr_t base = r.base.load(std::memory_order_acquire);
        if (base <= claimed || fault < base) continue;
        const std::size_t length = r.length.load(std::memory_order_relaxed);
        if (fault - base >= length) continue;
        const std::size_t stride = r.stride.load(std::memory_order_relaxed);
        const std::uintptr_t guard = base + (fault - base) / stride * stride;
        if (fault - guard < page) report(guard + page, stride - page, fault);
        break;
    }
    pass_on(sig, info, context);
}

void install_handler() noexcept {
    static std::once_flag once;
    std::call_once(once, [] {
        struct sigaction action {};
        action.sa_sigaction = on_fault;
        action.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&action.sa_mask);
        ::sigaction(SIGSEGV, &action, &previous);
    });
}

}  // namespace

std::size_t page_size() noexcept {
    static const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    return page;
}

// Runs on the spawning process's stack (stack_pool::allocate): no buffer
// in its frame, or the 2 KiB stacks of stack_test.cpp's bound overflow.
bool protect(void* page) noexcept {
    std::size_t n = guarded.load(std::memory_order_relaxed);
    do {
        if (n >= budget()) {
            if (!said_no.exchange(true))
                std::fprintf(stderr,
                             "csp: %zu process stacks have guard pages, the most one program gives them (a quarter "
                             "of vm.max_map_count); stacks made while they all live have none, and an overflow of "
                             "one is found only when its process ends (runtime_options::guard_pages)\n",
                             n);
            return false;
        }
    } while (!guarded.compare_exchange_weak(n, n + 1, std::memory_order_relaxed));
    if (::mprotect(page, page_size(), PROT_NONE) == 0) return true;
    const int error = errno;
    guarded.fetch_sub(1, std::memory_order_relaxed);
    if (!said_no.exchange(true))
        std::fprintf(stderr,
                     "csp: a process stack gets no guard page (mprotect: %s); an overflow of a stack without one is "
                     "found only when its process ends (runtime_options::guard_pages)\n",
                     std::strerror(error));
    return false;
}

void release(std::size_t n) noexcept { guarded.fetch_sub(n, std::memory_order_relaxed); }

std::size_t in_use() noexcept { return guarded.load(std::memory_order_relaxed); }

bool said_no_guard() noexcept { return said_no.load(); }

void add_region(const void* base, std::size_t length, std::size_t stride) noexcept {
    install_handler();
    for (region& r : regions) {
        std::uintptr_t free = 0;
        if (!r.base.compare_exchange_strong(free, claimed, std::memory_order_relaxed)) continue;
        r.length.store(length, std::memory_order_relaxed);
        r.stride.store(stride, std::memory_order_relaxed);
        r.base.store(reinterpret_cast<std::uintptr_t>(base), std::memory_order_release);
        return;
    }
}

void remove_region(const void* base) noexcept {
    for (region& r : regions) {
        std::uintptr_t mine = reinterpret_cast<std::uintptr_t>(base);
        if (r.base.compare_exchange_strong(mine, 0, std::memory_order_relaxed)) return;
    }
}

signal_stack::signal_stack() noexcept {
    stack_t current{};
    if (::sigaltstack(nullptr, &current) != 0 || (current.ss_flags & SS_DISABLE) == 0) return;
    void* p = ::mmap(nullptr, signal_stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    stack_t s{};
    s.ss_sp = p;
    s.ss_size = signal_stack_size;
    if (::sigaltstack(&s, nullptr) != 0) {
        ::munmap(p, signal_stack_size);
        return;
    }
    mine_ = p;
}

signal_stack::~signal_stack() {
    if (mine_ == nullptr) return;
    stack_t current{};
    if (::sigaltstack(nullptr, &current) == 0 && current.ss_sp == mine_) {
        stack_t off{};
        off.ss_flags = SS_DISABLE;
        ::sigaltstack(&off, nullptr);
    }
    ::munmap(mine_, signal_stack_size);
}

}  // namespace csp::detail::stack_guard
