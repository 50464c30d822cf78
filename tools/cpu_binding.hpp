#pragma once
// Where csp-launch --bind-to cpu pins each rank: one logical CPU per rank,
// round robin over the CPUs the launcher may use, in an order that puts one
// hardware thread of every physical core before the second thread of any
// (as Open MPI's --map-by core --bind-to core does with more ranks than
// cores). Without binding, which ranks share a core is left to the kernel's
// placement when they start, and with more ranks than cores that choice
// alone can move a stencil's step time by a third.
#include <sched.h>

#include <vector>

namespace csp::launch {

// The CPUs of this thread's affinity mask, cores first (see above); never
// empty. A CPU whose topology cannot be read counts as a core of its own.
std::vector<int> binding_order();

// Binds the calling thread to one CPU while alive, so that the processes it
// spawns inherit that CPU; the thread's own mask comes back at the end.
class bound_thread {
public:
    explicit bound_thread(int cpu);
    ~bound_thread();
    bound_thread(const bound_thread&) = delete;
    bound_thread& operator=(const bound_thread&) = delete;

private:
    cpu_set_t saved_;
};

}  // namespace csp::launch
