#pragma once
// One rank's incoming collective messages, matched by (source, tag).
//
// MPI's matching rules, in CSP terms. A message that arrives before anyone
// asks for it waits in `unexpected_`; a receive that comes before its message
// waits in `posted_` on a one-place channel of its own. Both are FIFO, so
// two messages from one source with one tag are received in the order
// sent, and two receives for one (source, tag) are served in the order
// posted. Waiting messages are kept by tag: ranks that run ahead (a loop of
// collectives whose first rank only sends) leave many calls' messages
// here, and a receive looks only at its own tag's, at most one per sender
// of that call's step.
//
// Invariants (under lock_):
//   - no message in unexpected_ matches a receive in posted_: deliver() checks
//     posted_ first and take() checks unexpected_ first;
//   - a failed source stays failed: every receive from it, or from any
//     source, that no message already here satisfies throws the stored
//     error, posted or not. What arrived before the failure is still
//     received. A receive from any source `among` a set (a group's
//     members) fails only for a source of the set.
//   - a receive of a collective's call fails once a message for that call
//     came that another collective, or another algorithm, drew (tag.hpp):
//     the ranks' calls differ, and the call's own messages may never come
//     (other_call_error). The message stays. Not on a revoked stream from
//     its failed call on, whose calls no longer line up.
//   - a revoked stream (revocation.hpp) stays revoked: every receive of it
//     from the revoked call on that no message already here satisfies
//     throws the revocation's error, from whichever source; the earliest
//     call revoked counts. So does this rank's send of such a call
//     (refuse_revoked_send). A revocation is not a message: no receive takes
//     it.
// Channel writes happen after the lock is released; a posted receive's
// channel holds one value, so the write never blocks.
//
// Reply slots (a one-place channel and its two ends) are reused: making a
// channel costs several allocations, and a collective posts a receive per
// message. A slot is back in `free_` only once its taker has read its one
// value, so a reused slot is always empty. A taker that leaves without its
// value (its read threw) gives the slot back only if no deliverer took it
// from posted_; otherwise the slot is abandoned, still owned by slots_, and
// a late write into it goes nowhere.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <functional>
#include <map>
#include <set>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "collectives/detail/peer_context.hpp"
#include "collectives/revocation.hpp"
#include "collectives/tag.hpp"
#include "csp/channel.hpp"
#include "csp/preemption.hpp"
#include "csp/runtime_lock.hpp"
#include "csp/spinlock.hpp"
#include "csp/wait_note.hpp"

namespace csp::collectives {

inline constexpr int any_source = -1;

// A revocation message (revocation.hpp) in a mailbox's body type;
// specialised beside each communicator's body.
inline detail::revocation_notice revocation_without_text() {
    return {-1, "a collective call failed (its revocation carried no text)"};
}
template <class Body>
struct revocation_body {
    static detail::revocation_notice notice(const Body&) { return revocation_without_text(); }
};

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
        if (tag::from_bits(tag).call() == revocation_code) {
            revoke(source, tag::from_bits(tag), revocation_body<Body>::notice(body));
            return;
        }
        std::unique_lock lk(lock_);
        if (!forgotten_.empty() && forgotten_locked(tag::from_bits(tag))) {
            lk.unlock();
            return;  // expected, and nobody will take it (forget)
        }
        bool refuses = false;
        for (auto it = posted_.begin(); it != posted_.end(); ++it) {
            if (it->tag != tag) {
                refuses = refuses || other_kind(it->tag, tag);
                continue;
            }
            if (it->source != any_source && it->source != source) continue;
            reply_slot* reply = it->reply;
            posted_.erase(it);
            lk.unlock();
            reply->out.write(envelope{source, tag, std::move(body), nullptr});
            return;
        }
        // The message stays, for the reports of what came (describe_other_calls,
        // unclaimed_report); a receive of the call it was drawn for differently
        // throws (other_call_error).
        waiting_of_locked(tag).push_back(envelope{source, tag, std::move(body), nullptr});
        if (!refuses) return;
        std::vector<posted> woken;
        std::erase_if(posted_, [&](const posted& p) {
            if (!other_kind(p.tag, tag)) return false;
            woken.push_back(p);
            return true;
        });
        lk.unlock();
        for (auto& p : woken) p.reply->out.write(envelope{source, p.tag, Body{}, other_call_error(p.tag, source, tag)});
    }

    // Blocks the calling process until a message from `source` (any_source:
    // from anyone) with `tag` is here; throws the source's stored failure
    // when no such message came before it. `among` (with any_source only;
    // empty: everyone): the sources whose failure fails the receive, those
    // that may send with `tag`; the caller keeps it alive until take
    // returns.
    envelope take(int source, std::uint64_t tag, std::span<const int> among = {}) {
        // A message that arrived already is taken without a switch, so a
        // receive is a preemption point (before the lock is taken).
        csp::preemption_point();
        std::unique_lock lk(lock_);
        if (auto waiting = unexpected_.find(tag); waiting != unexpected_.end()) {
            auto& arrived = waiting->second;
            for (auto it = arrived.begin(); it != arrived.end(); ++it) {
                if (source != any_source && it->source != source) continue;
                envelope m = std::move(*it);
                arrived.erase(it);
                if (arrived.empty()) retire_locked(waiting);
                return m;
            }
        }
        // Ranks that made another call often finish and leave: that their
        // calls differ is the cause, and is thrown before the departure. On
        // a revoked stream the ranks' calls no longer line up (a rank that
        // failed before its call drew a tag makes its next call under that
        // number): there the revocation's error stands, below.
        if (tag::from_bits(tag).call() != 0 && !unexpected_.empty() && !revocation_for(tag::from_bits(tag))) {
            if (auto e = other_call_here_locked(tag)) {
                lk.unlock();
                std::rethrow_exception(e);
            }
        }
        if (auto e = failure_for(source, among)) {
            lk.unlock();
            rethrow_waiting(e, source, tag);
        }
        if (!revoked_.empty()) {
            if (auto e = revocation_for(tag::from_bits(tag))) {
                lk.unlock();
                std::rethrow_exception(e);
            }
        }
        reply_slot* reply = free_slot_locked();
        posted_.push_back(posted{source, tag, reply, among});
        lk.unlock();
        envelope m;
        const wanted_note wanted{this, posted{source, tag, nullptr, among}};
        const csp::wait_note note(&describe_wanted, &wanted);
        try {
            m = reply->in.read();
        } catch (...) {
            give_back_unread(reply);
            throw;
        }
        lk.lock();
        free_.push_back(reply);
        lk.unlock();
        if (m.error) rethrow_waiting(m.error, source, tag);
        return m;
    }

    // Marks `source` (any_source: every source) failed with `error`: its
    // waiting receives, and every later one, throw it.
    void fail(int source, std::exception_ptr error) {
        std::vector<posted> woken;
        {
            std::lock_guard lk(lock_);
            if (source == any_source) everyone_ = error;
            else failed_.emplace(source, error);
            std::erase_if(posted_, [&](const posted& p) {
                if (source != any_source && p.source != any_source && p.source != source) return false;
                if (source != any_source && !p.among.empty() &&
                    std::find(p.among.begin(), p.among.end(), source) == p.among.end())
                    return false;
                woken.push_back(p);
                return true;
            });
        }
        for (auto& p : woken) p.reply->out.write(envelope{source, p.tag, Body{}, error});
    }

    // Stream t.stream_id() is revoked from call t.sequence() on, by rank
    // `source` (revocation.hpp): its waiting receives of those calls, and
    // every later one no message here satisfies, throw.
    void revoke(int source, tag t, const detail::revocation_notice& notice) {
        const auto error = detail::revoked_error(notice);
        std::vector<posted> woken;
        {
            std::lock_guard lk(lock_);
            // Relaxed: a process that heard of a revocation did so under
            // lock_, which orders this store before its later sends.
            revoked_any_.store(true, std::memory_order_relaxed);
            auto [it, fresh] = revoked_.try_emplace(t.stream_id(), revocation{t.sequence(), error});
            if (!fresh) {
                if (t.sequence() >= it->second.from) return;  // an earlier call's revocation stands
                it->second = revocation{t.sequence(), error};
            }
            std::erase_if(posted_, [&](const posted& p) {
                const auto q = tag::from_bits(p.tag);
                if (q.stream_id() != t.stream_id() || q.sequence() < t.sequence()) return false;
                woken.push_back(p);
                return true;
            });
        }
        for (auto& p : woken) p.reply->out.write(envelope{source, p.tag, Body{}, error});
    }

    // A send of a collective's call (a tag a collective drew) on a stream
    // this rank knows revoked at or before that call throws the
    // revocation's error, as a receive of it does. A rank that heard of a
    // failure first goes on to its next call under a number at which
    // others may still wait in the failed call (the ranks' calls no longer
    // line up): its messages there would look like another collective's
    // (other_call_error) before they heard of the failure too.
    void refuse_revoked_send(std::uint64_t bits) const {
        if (!revoked_any_.load(std::memory_order_relaxed)) return;
        const tag t = tag::from_bits(bits);
        if (t.call() == 0 || t.call() == revocation_code) return;
        std::exception_ptr e;
        {
            std::lock_guard lk(lock_);
            e = revocation_for(t);
        }
        if (e) std::rethrow_exception(e);
    }

    // This rank is done with the call whose tags share t's stream and
    // sequence (every step), and the others may still send it messages of
    // that call nobody will take: a task graph that failed, whose ranks
    // sent values and notices before they heard, or one this rank finished
    // while another failed and is still telling everyone. Those here are
    // dropped, and so is each that comes later. The last `forgets_kept`
    // calls forgotten are remembered: such messages were sent before their
    // senders' next calls, so a message of a call forgotten that many calls
    // ago (it is logged when its mailbox closes) would be one held up longer
    // than all those calls took.
    void forget(tag t) {
        std::vector<typename arrivals_by_tag::node_type> dropped;  // freed after the lock
        std::lock_guard lk(lock_);
        const auto call = call_of(t.bits());
        if (forgotten_.insert(call).second) {
            forgotten_order_.push_back(call);
            if (forgotten_order_.size() > forgets_kept) {
                forgotten_.erase(forgotten_order_.front());
                forgotten_order_.pop_front();
            }
            span_forgotten_locked();
        }
        for (auto it = unexpected_.begin(); it != unexpected_.end();) {
            const auto here = it++;
            if (call_of(here->first) == call) dropped.push_back(unexpected_.extract(here));
        }
    }

    // Messages that arrived and were not yet received, but for those of a
    // revoked stream's calls from the failed one on: every rank was told of
    // that failure, and the calls' other messages are expected to stay.
    std::size_t unclaimed() const {
        std::lock_guard lk(lock_);
        std::size_t n = 0;
        for (const auto& [bits, arrived] : unexpected_)
            if (!revocation_for(tag::from_bits(bits))) n += arrived.size();
        return n;
    }
    // The first `limit` of them, "rank 1's message with tag (...)" each.
    std::vector<std::string> describe_unclaimed(std::size_t limit) const {
        std::lock_guard lk(lock_);
        std::vector<std::string> out;
        for (const auto& [bits, arrived] : unexpected_)
            for (const envelope& e : arrived) {
                if (revocation_for(tag::from_bits(bits))) break;
                if (out.size() == limit) return out;
                std::string line = "rank " + std::to_string(e.source) + "'s message with tag ";
                detail::describe_tag(tag::from_bits(bits), line);
                out.push_back(std::move(line));
            }
        return out;
    }

    // What a communicator logs as it closes about the messages no call took
    // ("" if none): each came for a call this rank did not make, or one
    // whose ranks disagreed on its root (each group of agreeing ranks
    // completes alone), so the answer some rank returned may be wrong.
    std::string unclaimed_report() const {
        const std::size_t n = unclaimed();
        if (n == 0) return {};
        constexpr std::size_t listed_at_most = 4;
        std::string line = "closing with " + std::to_string(n) + (n == 1 ? " message" : " messages") +
                           " no collective call took: ";
        const auto listed = describe_unclaimed(listed_at_most);
        for (std::size_t i = 0; i < listed.size(); ++i) line.append(i == 0 ? "" : ", ").append(listed[i]);
        if (listed.size() < n) line.append(", ...");
        return line + " (a peer made a call this rank did not make, or the ranks named different roots for one call or "
                      "chose different algorithms for it)";
    }

    // Which tags may still come once the mailbox's owner has gone, and
    // need no receive (net::port_sink::expected_after_release): a
    // revocation (the failure it tells of was thrown at every rank of the
    // call already), and any tag of a revoked stream from its failed call
    // on. The filter starts from the revocations known now and learns those
    // that come after.
    std::function<bool(std::uint64_t)> expected_leftovers() const {
        std::map<std::uint32_t, std::uint32_t> from;  // stream id -> first call revoked
        std::set<std::pair<std::uint32_t, std::uint32_t>> forgotten;
        {
            std::lock_guard lk(lock_);
            for (const auto& [id, r] : revoked_) from.emplace(id, r.from);
            forgotten = forgotten_;
        }
        return [from = std::move(from), forgotten = std::move(forgotten)](std::uint64_t bits) mutable {
            if (forgotten.count(call_of(bits))) return true;
            const tag t = tag::from_bits(bits);
            if (t.call() == revocation_code) {
                auto [it, fresh] = from.try_emplace(t.stream_id(), t.sequence());
                if (!fresh && t.sequence() < it->second) it->second = t.sequence();
                return true;
            }
            const auto it = from.find(t.stream_id());
            return it != from.end() && t.sequence() >= it->second;
        };
    }

private:
    // A tag's waiting messages in order of arrival (usually one), by tag.
    using arrivals = boost::container::small_vector<envelope, 1>;
    using arrivals_by_tag = std::unordered_map<std::uint64_t, arrivals>;

    // Unnamed: a blocked receive is on the hot path. A deadlock report
    // still names the waiting process.
    struct reply_slot {
        csp::channel<envelope> channel{csp::buffer::fifo(1), csp::sharing::one_to_one};
        csp::writer<envelope> out = channel.writer();
        csp::reader<envelope> in = channel.reader();
    };
    struct posted {
        int source;
        std::uint64_t tag;
        reply_slot* reply;
        std::span<const int> among;  // see take
    };

    // For deadlock reports: which message a blocked take waits for, and
    // the messages of earlier calls that no call took.
    struct wanted_note {
        const mailbox* box;
        posted p;
    };
    static void describe_wanted(const void* ctx, std::string& out) {
        const auto& [box, p] = *static_cast<const wanted_note*>(ctx);
        detail::describe_receive(p.source, tag::from_bits(p.tag), out);
        box->describe_other_calls(tag::from_bits(p.tag), out);
    }

    // A peer's failure, as this receive throws it: a peer_error names the
    // receive it ended (detail/peer_context.hpp) and the messages of earlier
    // calls no call took, as a deadlock report does (peers that made other
    // calls often finish and leave); any other error, and a
    // revocation for a peer's failure (which names the receive it ended at
    // the rank that met it), is rethrown as it is. Called without the lock.
    [[noreturn]] void rethrow_waiting(const std::exception_ptr& e, int source, std::uint64_t bits) const {
        try {
            std::rethrow_exception(e);
        } catch (const revoked_by_peer_error&) {
            throw;
        } catch (const net::peer_error& x) {
            std::string also;
            describe_other_calls(tag::from_bits(bits), also);
            detail::rethrow_receiving(x, source, tag::from_bits(bits), also);
        }
    }
    // Whether tags a and b are of one call (stream and sequence) that two
    // collectives, or two algorithms, drew: tags no collective drew (a
    // program's own, the unmarked ones of a call's board) are never.
    static bool other_kind(std::uint64_t a, std::uint64_t b) {
        constexpr std::uint64_t kind = tag::call_mask | tag::algorithm_mask, step = 0xff;
        const std::uint64_t differ = a ^ b;
        return (differ & ~(kind | step)) == 0 && (differ & kind) != 0 && (a & tag::call_mask) != 0 &&
               (b & tag::call_mask) != 0;
    }
    // The error of a receive with tag `mine` whose call met `source`'s
    // message with tag `theirs` (other_kind): "allreduce butterfly: rank 1
    // met this call with allreduce by rabenseifner ...", in the words a
    // host board's meeting uses for another call (host_meeting.hpp). No
    // rank of the call gets an answer: this one throws, which revokes the
    // stream at every rank (revocation.hpp), and those waiting for this
    // rank's messages hear of it.
    static std::exception_ptr other_call_error(std::uint64_t mine, int source, std::uint64_t theirs) {
        const tag m = tag::from_bits(mine), t = tag::from_bits(theirs);
        std::string what(call_name(m.call()));
        if (const auto a = algorithm_name(call_name(m.call()), m.algorithm()); !a.empty()) what.append(" ").append(a);
        what.append(": rank ").append(std::to_string(source)).append(" met this call with ");
        if (t.call() != m.call()) what.append("a call of ").append(call_name(t.call()));
        else what.append(call_name(t.call()));
        detail::describe_algorithm(t, what);
        what.append(" (its message with tag ");
        detail::describe_tag(t, what);
        what.append("): ").append(t.call() != m.call()
                                      ? same_calls_rule
                                      : "the ranks chose different algorithms for one call, as they do where their "
                                        "values' sizes differ across a bound of the selection table (the vectors of "
                                        "an element-wise fold and the buffers of broadcast_into must have one length "
                                        "at every rank)");
        return std::make_exception_ptr(usage_error(what));
    }
    // other_call_error for a message here of tag's call, or nullptr.
    std::exception_ptr other_call_here_locked(std::uint64_t tag) const {
        for (const auto& [bits, arrived] : unexpected_)
            if (other_kind(tag, bits) && !arrived.empty()) return other_call_error(tag, arrived.front().source, bits);
        return nullptr;
    }

    // Messages of earlier calls of t's stream that no call took: when the
    // ranks' calls draw different numbers of tags (an allgather of vectors
    // against a broadcast), the calls no longer line up, and the other
    // collective's messages wait under earlier numbers. (Such a message may
    // also be one a call of this rank takes later, as a halo's rows wait for
    // its finish(): hence "may".) A message for t's call itself that another
    // collective or algorithm drew is never here while t's receive waits: it
    // failed the receive (other_call_error). Skipped if the lock is busy: a
    // report is made while the mailbox's users are blocked, so it rarely is.
    void describe_other_calls(tag t, std::string& out) const {
        if (!lock_.try_lock()) return;
        std::string earlier;
        std::size_t more = 0;
        for (const auto& [bits, arrived] : unexpected_) {
            const tag u = tag::from_bits(bits);
            if (u.stream_id() != t.stream_id() || u.sequence() >= t.sequence()) continue;
            for (const envelope& e : arrived) {
                if (earlier.size() > 160) {
                    ++more;
                    continue;
                }
                earlier.append(earlier.empty() ? "" : ", ")
                    .append("rank ")
                    .append(std::to_string(e.source))
                    .append("'s ")
                    .append(u.call() != 0 ? call_name(u.call()) : std::string_view("message"));
                detail::describe_algorithm(u, earlier);
                earlier.append(" (call ").append(std::to_string(u.sequence())).append(")");
            }
        }
        lock_.unlock();
        if (earlier.empty()) return;
        out.append("; no call took ").append(earlier);
        if (more != 0) out.append(" and ").append(std::to_string(more)).append(" more");
        out.append(": the ranks may have made different collective calls");
    }

    // The messages waiting with `tag`, in a map entry made for it if there
    // is none: a spare one when there is (see spare_).
    arrivals& waiting_of_locked(std::uint64_t tag) {
        if (auto it = unexpected_.find(tag); it != unexpected_.end()) return it->second;
        if (spare_.empty()) return unexpected_[tag];
        auto node = std::move(spare_.back());
        spare_.pop_back();
        node.key() = tag;
        return unexpected_.insert(std::move(node)).position->second;
    }
    // Takes an emptied tag's entry out of the map and keeps it for another.
    void retire_locked(typename arrivals_by_tag::iterator emptied) {
        auto node = unexpected_.extract(emptied);
        if (spare_.size() < max_spare) spare_.push_back(std::move(node));
    }

    reply_slot* free_slot_locked() {
        if (free_.empty()) {
            slots_.push_back(std::make_unique<reply_slot>());
            return slots_.back().get();
        }
        reply_slot* r = free_.back();
        free_.pop_back();
        return r;
    }

    // The taker of `reply` stopped waiting without its value.
    void give_back_unread(reply_slot* reply) {
        std::lock_guard lk(lock_);
        const auto n = std::erase_if(posted_, [&](const posted& p) { return p.reply == reply; });
        if (n != 0) free_.push_back(reply);  // no deliverer has it: still empty
    }

    std::exception_ptr revocation_for(tag t) const {
        const auto it = revoked_.find(t.stream_id());
        return it != revoked_.end() && t.sequence() >= it->second.from ? it->second.error : nullptr;
    }

    std::exception_ptr failure_for(int source, std::span<const int> among) const {
        if (everyone_) return everyone_;
        if (source == any_source) {
            if (among.empty()) return failed_.empty() ? nullptr : failed_.begin()->second;
            for (const int q : among)
                if (auto it = failed_.find(q); it != failed_.end()) return it->second;
            return nullptr;
        }
        auto it = failed_.find(source);
        return it == failed_.end() ? nullptr : it->second;
    }

    // Only processes of the runtime that made the mailbox use it, and
    // nothing under the lock suspends: free with one worker thread.
    mutable csp::runtime_lock<csp::spinlock> lock_{csp::runtime_lock<csp::spinlock>::needed_here()};
    arrivals_by_tag unexpected_;
    // Entries of unexpected_ taken out when their tag's last message was
    // received, empty, for the next tag: most messages of a loop of
    // collectives arrive before their receive, and each would otherwise
    // allocate and free a map node. At most max_spare are kept.
    static constexpr std::size_t max_spare = 64;
    std::vector<typename arrivals_by_tag::node_type> spare_;
    std::vector<posted> posted_;
    std::vector<std::unique_ptr<reply_slot>> slots_;  // every slot ever made
    std::vector<reply_slot*> free_;                   // slots no taker holds
    std::map<int, std::exception_ptr> failed_;
    std::exception_ptr everyone_;
    struct revocation {
        std::uint32_t from;  // the first call revoked
        std::exception_ptr error;
    };
    std::map<std::uint32_t, revocation> revoked_;  // by stream id
    std::atomic<bool> revoked_any_{false};         // !revoked_.empty(), read without lock_
    // Calls this rank is done with, whose late messages are dropped (forget),
    // the oldest first in forgotten_order_.
    static constexpr std::size_t forgets_kept = 256;
    std::set<std::pair<std::uint32_t, std::uint32_t>> forgotten_;
    std::deque<std::pair<std::uint32_t, std::uint32_t>> forgotten_order_;
    // Sequences count modulo 2^28 (2^20 in a hybrid job: tag.hpp), so a
    // forgotten call's number comes round again as a new call's. A message
    // of its stream this many calls away from it, either way, says the
    // ranks are far past it: no late message of it is still to come, and
    // it is forgotten for good (else that new call's messages would be
    // dropped, and it would wait for ever).
    static constexpr std::uint32_t forgotten_for_good = 1u << 16;
    // The smallest and largest sequence in forgotten_, of any stream.
    std::uint32_t forgotten_low_ = 0, forgotten_high_ = 0;
    void span_forgotten_locked() {
        forgotten_low_ = tag::sequence_mask, forgotten_high_ = 0;
        for (const auto& [id, seq] : forgotten_)
            forgotten_low_ = std::min(forgotten_low_, seq), forgotten_high_ = std::max(forgotten_high_, seq);
    }
    // Whether t's call is forgotten; first forgets for good the calls of
    // t's stream that t is far from (forgotten_for_good). In the stream's
    // calls in order, those are at either end.
    bool forgotten_locked(tag t) {
        const std::uint32_t id = t.stream_id(), seq = t.sequence();
        // Most deliveries are of a call after every forgotten one, and near
        // all of them: none is t's, none is far.
        if (seq > forgotten_high_ && seq - forgotten_low_ < forgotten_for_good) return false;
        const auto far = [&](std::uint32_t f) { return (seq > f ? seq - f : f - seq) >= forgotten_for_good; };
        for (auto it = forgotten_.lower_bound({id, 0}); it != forgotten_.end() && it->first == id && far(it->second);)
            it = forget_for_good_locked(it);
        for (auto it = forgotten_.upper_bound({id, tag::sequence_mask}); it != forgotten_.begin();) {
            --it;
            if (it->first != id || !far(it->second)) break;
            it = forget_for_good_locked(it);
        }
        span_forgotten_locked();
        return forgotten_.count({id, seq}) != 0;
    }
    auto forget_for_good_locked(std::set<std::pair<std::uint32_t, std::uint32_t>>::iterator it) {
        // Every call in forgotten_ is in forgotten_order_ (forget).
        if (auto at = std::find(forgotten_order_.begin(), forgotten_order_.end(), *it); at != forgotten_order_.end())
            forgotten_order_.erase(at);
        return forgotten_.erase(it);
    }

    // A tag's call: its stream and sequence.
    static std::pair<std::uint32_t, std::uint32_t> call_of(std::uint64_t bits) {
        const tag t = tag::from_bits(bits);
        return {t.stream_id(), t.sequence()};
    }
};

}  // namespace csp::collectives
