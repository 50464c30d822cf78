#pragma once
// One rank's incoming collective messages, matched by (source, tag).
//
// MPI's matching rules, in CSP terms. A message that arrives before anyone
// asks for it waits in `unexpected_`; a receive that comes before its message
// waits in `posted_` on a one-place channel of its own. Both lists are FIFO,
// so two messages from one source with one tag are received in the order
// sent, and two receives for one (source, tag) are served in the order
// posted.
//
// Invariants (under lock_):
//   - no message in unexpected_ matches a receive in posted_: deliver() checks
//     posted_ first and take() checks unexpected_ first;
//   - a failed source stays failed: every receive from it, or from any
//     source, that no message already here satisfies throws the stored
//     error, posted or not. What arrived before the failure is still
//     received.
// Channel writes happen after the lock is released; a posted receive's
// channel holds one value, so the write never blocks.
#include <cstdint>
#include <deque>
#include <exception>
#include <iterator>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include "csp/channel.hpp"

namespace csp::collectives {

inline constexpr int any_source = -1;

template <class Body>
class mailbox {
public:
    struct envelope {
        int source = any_source;
        std::uint64_t tag = 0;
        Body body{};
        std::exception_ptr error;
    };

    // Never blocks.
    void deliver(int source, std::uint64_t tag, Body body) {
        std::unique_lock lk(lock_);
        for (auto it = posted_.begin(); it != posted_.end(); ++it) {
            if (it->tag != tag || (it->source != any_source && it->source != source)) continue;
            csp::writer<envelope> reply = std::move(it->reply);
            posted_.erase(it);
            lk.unlock();
            reply.write(envelope{source, tag, std::move(body), nullptr});
            return;
        }
        unexpected_.push_back(envelope{source, tag, std::move(body), nullptr});
    }

    // Blocks the calling process until a message from `source` (any_source:
    // from anyone) with `tag` is here; throws the source's stored failure
    // when no such message came before it.
    envelope take(int source, std::uint64_t tag) {
        std::unique_lock lk(lock_);
        for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it) {
            if (it->tag != tag || (source != any_source && it->source != source)) continue;
            envelope m = std::move(*it);
            unexpected_.erase(it);
            return m;
        }
        if (auto e = failure_for(source)) std::rethrow_exception(e);
        // Unnamed: a blocked receive is on the hot path. A deadlock report
        // still names the waiting process.
        csp::channel<envelope> reply{csp::buffer::fifo(1), csp::sharing::one_to_one};
        posted_.push_back(posted{source, tag, reply.writer()});
        csp::reader<envelope> in = reply.reader();
        lk.unlock();
        envelope m = in.read();
        if (m.error) std::rethrow_exception(m.error);
        return m;
    }

    // Marks `source` (any_source: every source) failed with `error`: its
    // waiting receives, and every later one, throw it.
    void fail(int source, std::exception_ptr error) {
        std::list<posted> woken;
        {
            std::lock_guard lk(lock_);
            if (source == any_source) everyone_ = error;
            else failed_.emplace(source, error);
            for (auto it = posted_.begin(); it != posted_.end();) {
                auto next = std::next(it);
                if (source == any_source || it->source == any_source || it->source == source)
                    woken.splice(woken.end(), posted_, it);
                it = next;
            }
        }
        for (auto& p : woken) p.reply.write(envelope{source, p.tag, Body{}, error});
    }

    // Messages that arrived and were not yet received.
    std::size_t unclaimed() const {
        std::lock_guard lk(lock_);
        return unexpected_.size();
    }

private:
    struct posted {
        int source;
        std::uint64_t tag;
        csp::writer<envelope> reply;
    };

    std::exception_ptr failure_for(int source) const {
        if (everyone_) return everyone_;
        if (source == any_source) return failed_.empty() ? nullptr : failed_.begin()->second;
        auto it = failed_.find(source);
        return it == failed_.end() ? nullptr : it->second;
    }

    mutable std::mutex lock_;
    std::deque<envelope> unexpected_;
    std::list<posted> posted_;
    std::map<int, std::exception_ptr> failed_;
    std::exception_ptr everyone_;
};

}  // namespace csp::collectives
