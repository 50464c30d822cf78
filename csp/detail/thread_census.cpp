#include "csp/detail/thread_census.hpp"

#include <dirent.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace csp::detail::thread_census {

namespace {

std::atomic<long> workers{0};
std::atomic<long> runtimes{0};
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

void runtime_started() noexcept { runtimes.fetch_add(1); }
void runtime_ended() noexcept { runtimes.fetch_sub(1); }
long runtimes_running() noexcept { return runtimes.load(); }
void worker_entered() noexcept { workers.fetch_add(1); }
void worker_left() noexcept { workers.fetch_sub(1); }
void begin_walk() noexcept { cached = -1; }

bool others_alive() noexcept {
    if (cached < 0) {
        const long n = kernel_thread_count();
        cached = (n < 0 || n > workers.load()) ? 1 : 0;
    }
    return cached == 1;
}

}  // namespace csp::detail::thread_census
