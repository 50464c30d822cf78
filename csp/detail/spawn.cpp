#include "csp/detail/spawn.hpp"

#include <algorithm>
#include <cstdint>

#include <boost/fiber/fiber.hpp>

#include "csp/detail/fiber_internals.hpp"

namespace csp::detail {

namespace {

// The StackAllocator Boost.Fiber is given for one process: the stack the
// process's entry closure was already moved to, from just below the closure
// down. Boost keeps a copy in the fiber and gives the stack back through it,
// whole, to the pool.
class entry_stack {
public:
    entry_stack(stack_allocator pool, boost::context::stack_context below) noexcept
        : pool_(std::move(pool)), below_(below) {}
    boost::context::stack_context allocate() noexcept { return below_; }
    // Every stack of the pool has the same size: what is missing from `sc`
    // is the closure's room.
    void deallocate(boost::context::stack_context& sc) noexcept {
        const std::size_t reserved = pool_.stack_size() - sc.size;
        sc.sp = static_cast<char*>(sc.sp) + reserved;
        sc.size += reserved;
        pool_.deallocate(sc);
    }

private:
    stack_allocator pool_;  // Boost keeps this object in the fiber: small
    boost::context::stack_context below_;
};

// What Boost runs on the new fiber: the closure in place. Owns it until it
// ran, so a fiber destroyed unstarted still destroys its closure.
class entry_start {
public:
    entry_start(const entry_ops* ops, void* body) noexcept : ops_(ops), body_(body) {}
    entry_start(entry_start&& o) noexcept : ops_(o.ops_), body_(std::exchange(o.body_, nullptr)) {}
    entry_start& operator=(entry_start&&) = delete;
    ~entry_start() {
        if (body_) ops_->destroy(body_);
    }
    void operator()() noexcept { ops_->run(std::exchange(body_, nullptr)); }

private:
    const entry_ops* ops_;
    void* body_;
};

// The closure is placed on the stack before Boost sees it, so it is paid for
// once; Boost's own copy of what it runs (entry_start) is two pointers.
void make_fiber(runtime_core* rt, const entry_ops& ops, void* body) {
    stack_allocator pool = rt->stacks();
    boost::context::stack_context sc = pool.allocate();
    const auto top = reinterpret_cast<std::uintptr_t>(sc.sp);
    const std::uintptr_t at = (top - ops.size) & ~(std::uintptr_t{std::max<std::size_t>(ops.align, 16)} - 1);
    try {
        ops.move_to(reinterpret_cast<void*>(at), body);
    } catch (...) {
        pool.deallocate(sc);
        throw;
    }
    const std::size_t reserved = top - at;
    boost::context::stack_context below = sc;
    below.sp = reinterpret_cast<void*>(at);
    below.size -= reserved;
    boost::fibers::fiber(boost::fibers::launch::post, std::allocator_arg,
                         entry_stack(std::move(pool), below), entry_start(&ops, reinterpret_cast<void*>(at)))
        .detach();
}

}  // namespace

void launch(join_state* join, int prio, const entry_ops& ops, void* body) {
    runtime_core* const rt = join->kin.rt;
    const int outer = std::exchange(spawning_priority, prio);
    // Counted before the fiber exists: once it does, it may finish and its
    // join be gone (a process group waited for elsewhere) before this returns.
    rt->process_spawned();
    join->launching();
    try {
        make_fiber(rt, ops, body);
    } catch (...) {
        join->launch_failed();
        rt->process_exited();
        spawning_priority = outer;
        throw;
    }
    spawning_priority = outer;
}

process_record::process_record(runtime_core* rt, const process_record* parent, std::size_t index, std::string name)
    : rt_(rt), parent_(parent), index_(index), name_(std::move(name)) {}

process_record::~process_record() = default;

process_record* current_process() noexcept { return fiber::record_of(boost::fibers::context::active()); }

void join_state::describe(std::string& out) const {
    out.append("waiting for ")
        .append(std::to_string(remaining_))
        .append(remaining_ == 1 ? " child process" : " child processes")
        .append(" to finish");
}

process_record* begin_process(void* storage, join_state* join, std::size_t index, int prio, std::string* name,
                              void* frame) {
    const family& kin = join->kin;
    auto* rec = new (storage) process_record(kin.rt, kin.parent, index, name ? std::move(*name) : std::string());
    rec->stack_top = frame;
    rec->daemon = kin.daemon;
    rec->made_at = kin.made_at;
    rec->priority.store(static_cast<std::int8_t>(prio), std::memory_order_relaxed);
    boost::fibers::context::active()->set_properties(new (rec->hook) fiber::record_hook(rec));
    kin.rt->process_started(rec);
    notify(event::kind::process_begin);
    return rec;
}

void rethrow_when_started_end(join_state& join, std::exception_ptr error) {
    join.abandon_unstarted();
    join.wait();
    notify(event::kind::par_end);
    std::rethrow_exception(std::move(error));
}

void end_process(process_record* rec, join_state* join, std::exception_ptr err) noexcept {
    notify(event::kind::process_end);
    join->kin.rt->process_stopped(rec);
    boost::fibers::context::active()->set_properties(nullptr);  // destroys the hook in place
    rec->~process_record();
    join->child_done(std::move(err));
}

}  // namespace csp::detail
