#pragma once
#include "csp/waiter.hpp"

namespace csp::detail {

// Intrusive FIFO of wait_nodes, guarded by its owner's lock. Nodes whose
// waiter has already committed elsewhere stay until someone meets them and
// unlinks them; commit() fails on such a node, so they are skipped, not served.
class wait_queue {
public:
    bool empty() const noexcept { return head_ == nullptr; }
    wait_node* front() const noexcept { return head_; }

    void push_back(wait_node& n) noexcept {
        n.prev = tail_;
        n.next = nullptr;
        if (tail_) tail_->next = &n; else head_ = &n;
        tail_ = &n;
        n.linked = true;
    }

    void erase(wait_node& n) noexcept {
        if (!n.linked) return;
        if (n.prev) n.prev->next = n.next; else head_ = n.next;
        if (n.next) n.next->prev = n.prev; else tail_ = n.prev;
        n.prev = n.next = nullptr;
        n.linked = false;
    }

    // Unlink and commit the first node whose waiter is still waiting.
    wait_node* pop_committed() noexcept {
        while (wait_node* n = head_) {
            erase(*n);
            if (n->commit()) return n;
        }
        return nullptr;
    }

    // Is some waiter other than `self` still waiting here? (Peek only.)
    bool has_waiting_other(const waiter* self) const noexcept {
        for (wait_node* n = head_; n; n = n->next)
            if (n->owner != self && n->owner->is_waiting()) return true;
        return false;
    }

    // Commit every waiting node with `why` and wake it; empties the queue.
    void release_all(wait_node::outcome why) noexcept {
        while (wait_node* n = pop_committed()) {
            n->result = why;
            n->owner->wake();
        }
    }

private:
    wait_node* head_ = nullptr;
    wait_node* tail_ = nullptr;
};

}  // namespace csp::detail
