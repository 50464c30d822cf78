#include "csp/detail/thread_census.hpp"

#include <dirent.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace csp::detail::thread_census {

namespace {

// Runtimes in the high half, workers in the low half (thread_census.hpp).
std::atomic<std::uint64_t> census{0};
constexpr std::uint64_t one_worker = 1, one_runtime = std::uint64_t{1} << 32;
thread_local int cached = -1;  // -1: not asked during this walk; else 0 or 1

// The process's thread count from /proc/self/status, or -1.
long kernel_thread_count() noexcept {
    std::FILE* f = std::fopen("/proc/self/status", "r");
    if (f == nullptr) return -1;
    char line[256];
    long n = -1;
    while (std::fgets(line, sizeof line, f) != nullptr) {
        if (std::strncmp(line, "Threads:", 8) == 0) {
            n = std::strtol(line + 8, nullptr, 10);
            break;
        }
    }
    std::fclose(f);
    return n;
}

}  // namespace

bool only_thread() noexcept {
    // Lists /proc/self/task up to its second thread, which is cheaper than
    // reading the whole of /proc/self/status.
    DIR* tasks = ::opendir("/proc/self/task");
    if (tasks == nullptr) return false;
    int seen = 0;
    while (const dirent* e = ::readdir(tasks)) {
        if (e->d_name[0] == '.') continue;
        if (++seen > 1) break;
    }
    ::closedir(tasks);
    return seen == 1;
}

void run_started() noexcept { census.fetch_add(one_runtime + one_worker); }
void run_ended() noexcept { census.fetch_sub(one_runtime + one_worker); }
void worker_entered() noexcept { census.fetch_add(one_worker); }
void worker_left() noexcept { census.fetch_sub(one_worker); }
long runtimes_running() noexcept { return static_cast<long>(census.load() >> 32); }
void begin_walk() noexcept { cached = -1; }

bool others_may_act() noexcept {
    if (cached < 0) {
        // The census first: a thread the kernel counts is either a worker
        // counted here or an outside thread (a thread enters the census
        // after it exists and leaves it before it ends).
        const std::uint64_t now = census.load();
        if ((now >> 32) > 1) {
            cached = 1;  // another runtime runs
        } else {
            const long n = kernel_thread_count();
            cached = (n < 0 || n > static_cast<long>(now & 0xffffffffu)) ? 1 : 0;
        }
    }
    return cached == 1;
}

}  // namespace csp::detail::thread_census
