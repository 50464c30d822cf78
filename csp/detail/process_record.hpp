#pragma once
#include <atomic>
#include <cstddef>
#include <string>

#include <boost/fiber/context.hpp>
#include <boost/fiber/properties.hpp>

namespace csp {
class waiter;
}

namespace csp::detail {

class runtime_core;

// What the runtime knows about one running process. It is attached to the
// process's fiber as Boost.Fiber "properties", so any code running on the fiber
// finds it through context::active() without a lookup table.
//
// Storage: the record lives in the process's own entry frame (see spawn.hpp),
// not on the heap. Boost deletes properties through `delete`, so the class
// provides a no-op operator delete: the record is destroyed in place when the
// entry frame detaches it with set_properties(nullptr).
class process_record final : public boost::fibers::fiber_properties {
public:
    process_record(runtime_core* rt, const process_record* parent, std::size_t index,
                   std::string name)
        : fiber_properties(nullptr), rt_(rt), parent_(parent), index_(index),
          name_(std::move(name)) {}

    static void operator delete(void*) noexcept {}

    runtime_core* runtime() const noexcept { return rt_; }

    // The user's name, or a path in the par tree ("main.2.0") when none was given.
    std::string label() const {
        if (!name_.empty()) return name_;
        if (parent_ == nullptr) return "main";
        return parent_->label() + "." + std::to_string(index_);
    }

    void set_name(std::string name) { name_ = std::move(name); }

    // The process whose par started this one (nullptr for a root), and its
    // branch index there.
    const process_record* parent() const noexcept { return parent_; }
    std::size_t index() const noexcept { return index_; }

    // The untimed waiter this process is blocked in, or nullptr. Written by
    // the process itself around its suspension; read by the deadlock detector
    // while no fiber runs (runtime_core.hpp).
    std::atomic<waiter*> blocked_on{nullptr};

    // A daemon (process_group.hpp), fixed before the process registers.
    bool daemon = false;

    // Highest address of this process's own frames (sanitizer support).
    void* stack_top = nullptr;

    // Registry links, guarded by runtime_core's registry mutex.
    process_record* prev = nullptr;
    process_record* next = nullptr;

private:
    runtime_core* rt_;
    const process_record* parent_;
    std::size_t index_;
    std::string name_;
};

// The record of the calling fiber, or nullptr when the caller is not a process
// of a csp runtime (a plain thread, or a Boost fiber started by other code).
inline process_record* current_process() noexcept {
    return static_cast<process_record*>(boost::fibers::context::active()->get_properties());
}

}  // namespace csp::detail
