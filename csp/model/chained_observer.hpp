#pragma once
// What the recorder and the timeline share: an observer that takes over from
// the one installed before it, passes every event on to that one, and puts
// it back when done. Several can run at once; uninstall them in the reverse
// order of installing.
#include <atomic>

#include "csp/observer.hpp"

namespace csp::model {

class chained_observer : public csp::observer {
public:
    chained_observer(const chained_observer&) = delete;
    chained_observer& operator=(const chained_observer&) = delete;

protected:
    chained_observer() = default;

    // Call at the end of the derived constructor: from here on events
    // arrive, on any thread. An event that races with install() may miss
    // the previous observer.
    void install() { previous_.store(csp::set_observer(this), std::memory_order_release); }
    // Call once.
    void uninstall() { csp::set_observer(previous_.load(std::memory_order_acquire)); }
    void pass_on(const csp::event& e) const {
        if (csp::observer* p = previous_.load(std::memory_order_acquire)) p->on_event(e);
    }

private:
    std::atomic<csp::observer*> previous_{nullptr};
};

}  // namespace csp::model
