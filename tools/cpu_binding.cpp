#include "tools/cpu_binding.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace csp::launch {

namespace {

// The hardware threads that share `cpu`'s core, from the kernel's list
// ("0-1", "0,4", "2"); empty if it cannot be read.
std::vector<int> siblings_of(int cpu) {
    std::ifstream in("/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/thread_siblings_list");
    std::string list;
    std::vector<int> out;
    if (!std::getline(in, list)) return out;
    std::size_t at = 0;
    while (at < list.size()) {
        const std::size_t end = std::min(list.find(',', at), list.size());
        const std::string part = list.substr(at, end - at);
        const std::size_t dash = part.find('-');
        try {
            const int first = std::stoi(part.substr(0, dash));
            const int last = dash == std::string::npos ? first : std::stoi(part.substr(dash + 1));
            for (int c = first; c <= last; ++c) out.push_back(c);
        } catch (const std::exception&) {
            return {};
        }
        at = end + 1;
    }
    return out;
}

}  // namespace

std::vector<int> binding_order() {
    cpu_set_t mask;
    CPU_ZERO(&mask);
    if (::sched_getaffinity(0, sizeof mask, &mask) != 0)
        throw std::runtime_error(std::string("cannot read this process's CPUs: ") + std::strerror(errno));
    // (place among its core's threads, cpu): sorted, the first thread of
    // every core comes before any second thread.
    std::vector<std::pair<int, int>> keyed;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (!CPU_ISSET(cpu, &mask)) continue;
        const std::vector<int> sib = siblings_of(cpu);
        const auto place = std::find(sib.begin(), sib.end(), cpu);
        keyed.emplace_back(place == sib.end() ? 0 : static_cast<int>(place - sib.begin()), cpu);
    }
    std::sort(keyed.begin(), keyed.end());
    std::vector<int> order;
    for (const auto& [place, cpu] : keyed) order.push_back(cpu);
    if (order.empty()) throw std::runtime_error("this process may run on no CPU");
    return order;
}

bound_thread::bound_thread(int cpu) {
    CPU_ZERO(&saved_);
    if (::sched_getaffinity(0, sizeof saved_, &saved_) != 0)
        throw std::runtime_error(std::string("cannot read this thread's CPUs: ") + std::strerror(errno));
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (::sched_setaffinity(0, sizeof one, &one) != 0)
        throw std::runtime_error("cannot bind to CPU " + std::to_string(cpu) + ": " + std::strerror(errno));
}

bound_thread::~bound_thread() { (void)::sched_setaffinity(0, sizeof saved_, &saved_); }

}  // namespace csp::launch
