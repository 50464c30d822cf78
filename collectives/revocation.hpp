#pragma once
// A collective call that fails at one rank fails at every rank.
//
// Some bad input is seen by one rank only: a root's scatter holds too few
// values, one rank's alltoall too many, the root of a reduce folds vectors
// of different lengths, a user's op throws, one rank names a root outside
// the group. That rank throws; the others would wait for its messages for
// ever. So a collective called by its plain name (dispatch.hpp) or by its
// algorithm's (guarded_algorithm, below), and Aspen's reduce, runs inside
// `guarded` (a hierarchical one inside
// hierarchy.hpp's guarded_levels, which passes it on to every level): an
// error thrown at this rank (not one received from another rank: a peer's
// failure, another rank's revocation) is sent to every rank of the group,
// itself included, marked with the call's first tag and revocation_code
// (tag.hpp). Each mailbox then fails every receive of that stream from that
// call on, waiting or to come, that no message already there satisfies:
//
//   stream_revoked: "rank 0's scatter (call 3 of stream 0) failed: scatter:
//   the root holds 3 values for 4 ranks; ..."
//
// A peer's failure is passed on the same way. A rank whose call ends
// because a peer died or left while it still owed a message (or was owed
// one) is not the only rank stuck: in a butterfly, rank 0 waits for rank
// 2, which waited for the rank that died, and only rank 2 hears of it
// through its receive. So a peer_error also revokes the stream, and the
// ranks waiting elsewhere in the call throw `revoked_by_peer_error`, a
// net::peer_error naming the same peer, whose text says which rank's call
// it ended and why: "rank 2's allreduce (call 999 of stream 3) failed: lost
// node 3 of job 'j': ...". The revocation carries the peer's rank
// (revocation_notice).
//
// From that call on the ranks' counters of the stream disagree (the failing
// rank drew fewer tags than the others), so no later call of the stream
// could pair the right messages: it stays revoked, as MPI's
// MPI_Comm_revoke leaves a communicator. A program that catches the error
// and goes on uses another stream (or a new communicator). A later call
// that sends or receives a message of the stream throws (a rank that knows
// of the revocation sends nothing under numbers where others may still
// wait in the failed call: mailbox::refuse_revoked_send), and the board
// algorithms, which pair calls without messages, either run (the shared
// board of ranks as fibers, which pairs meetings in order) or refuse the
// meeting (a host board, which compares the calls' numbers).
//
// Cost: reading the stream's counter once per call (an atomic load for the
// first streams, tag.hpp), a branch in each delivery and each receive, and
// a relaxed atomic load in each send.
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "collectives/communicator.hpp"
#include "collectives/tag.hpp"
#include "csp/error.hpp"
#include "net/errors.hpp"

namespace csp::collectives {

// A receive of a stream that a rank revoked at or before the receive's call.
class stream_revoked : public usage_error {
public:
    stream_revoked(const std::string& what, std::string cause) : usage_error(what), cause_(std::move(cause)) {}
    // Which rank's call failed, and why ("rank 0's scatter (call 3 of
    // stream 0) failed: ...").
    const std::string& cause() const noexcept { return cause_; }

private:
    std::string cause_;
};

// A receive of a stream revoked because a peer failed in one of its calls
// at another rank (see above): a peer_error, so code that handles lost
// peers handles it, naming the peer that failed.
class revoked_by_peer_error : public net::peer_error {
public:
    revoked_by_peer_error(int peer, const std::string& what, std::string cause)
        : net::peer_error(peer, what), cause_(std::move(cause)) {}
    // Which rank's call failed, and why (as stream_revoked::cause).
    const std::string& cause() const noexcept { return cause_; }

private:
    std::string cause_;
};

namespace detail {

// What a revocation message carries: why the call failed, and the peer
// whose failure it was, if it was one (-1 otherwise).
struct revocation_notice {
    std::int32_t peer = -1;
    std::string text;

    template <class A>
    void serialize(A& a) {
        a(peer, text);
    }
};

// A usage error every rank of the call finds alike, from what they all hold
// (a put_get request outside the group, seen by every rank after the
// requests were gathered; values of different types or lengths in a board
// meeting, where every rank reads every part): their counters still agree,
// so the stream needs no revocation.
class agreed_error : public usage_error {
public:
    using usage_error::usage_error;
};

// The tag the next call of stream s will draw (its sequence is the call's),
// where the communicator can tell.
template <class C>
constexpr bool has_upcoming_tag = requires(C& c, stream s) {
    { c.upcoming_tag(s) } -> std::same_as<tag>;
};

// This rank as a reader knows it: in a group (a split, a hierarchy's
// level), its rank in the parent as well.
template <class C>
std::string rank_name(C& comm) {
    std::string name = "rank " + std::to_string(comm.rank());
    if constexpr (requires { comm.member(0); comm.parent(); })
        name = "rank " + std::to_string(comm.member(comm.rank())) + " (" + name + " of a group)";
    return name;
}

// What a revocation message carries: the failed call and why. `call` is
// the sequence of the call's first tag, where it names the call (a
// hierarchical call draws on several groups); the stream is the caller's
// id (a group's tags carry a context in the stream bits).
template <class C>
std::string revocation_text(C& comm, std::string_view collective, stream s, std::optional<std::uint32_t> call,
                            const std::exception& why) {
    return rank_name(comm) + "'s " + std::string(collective) + " (" +
           (call ? "call " + std::to_string(*call) + " of " : std::string()) + "stream " + std::to_string(s.id) +
           ") failed: " + why.what();
}

// The error a receive of a revoked stream throws.
inline std::exception_ptr revoked_error(const revocation_notice& n) {
    std::string what = n.text +
                       "; every rank stops at that call, and the ranks' calls of this stream no longer pair up (a "
                       "later receive of it fails too): go on in another stream";
    if (n.peer >= 0) return std::make_exception_ptr(revoked_by_peer_error(n.peer, what, n.text));
    return std::make_exception_ptr(stream_revoked(what, n.text));
}

// Tells every rank of comm (this one too) that the call with tag `first`
// failed here. A rank that cannot be told (gone) fails on its own, so a
// revocation is a notice (send_notice, communicator.hpp).
template <class C>
void revoke(C& comm, tag first, const revocation_notice& n) {
    const tag t = first.step(0).of_call(revocation_code);
    for (int r = 0; r < comm.size(); ++r) {
        try {
            send_notice(comm, r, t, revocation_notice(n));
        } catch (...) {
        }
    }
}

// Inside a catch block: what to revoke a stream with for the error being
// handled. This rank's own error gets describe(error), and so does a
// peer's failure this rank met (with the peer's rank); another rank's
// revocation is passed on (its cause) only when `relay`; an error every
// rank hears anyway (a deadlock) or finds alike (agreed_error) gets none.
template <class Describe>
std::optional<revocation_notice> revocation_for_current_error(bool relay, Describe describe) {
    try {
        throw;
    } catch (const stream_revoked& r) {
        return relay ? std::optional<revocation_notice>({-1, r.cause()}) : std::nullopt;
    } catch (const revoked_by_peer_error& r) {
        return relay ? std::optional<revocation_notice>({r.peer(), r.cause()}) : std::nullopt;
    } catch (const agreed_error&) {
        return std::nullopt;
    } catch (const net::peer_error& e) {
        return revocation_notice{e.peer(), describe(e)};
    } catch (const deadlock_error&) {
        return std::nullopt;
    } catch (const std::exception& e) {
        return revocation_notice{-1, describe(e)};
    } catch (...) {
        return std::nullopt;
    }
}

// Runs f(), the part of a collective call of stream s whose first tag is
// `first`. An error of this rank's own revokes the stream from that call
// on, at every rank, and is rethrown.
template <class C, class F>
decltype(auto) guarded_from(C& comm, tag first, stream s, std::string_view collective, F&& f) {
    try {
        return std::forward<F>(f)();
    } catch (...) {
        const auto notice = revocation_for_current_error(false, [&](const std::exception& e) {
            return revocation_text(comm, collective, s, first.sequence(), e);
        });
        if (notice) revoke(comm, first, *notice);
        throw;
    }
}

// Runs one collective call, f(), of stream s, guarded from its first tag.
template <class C, class F>
decltype(auto) guarded(C& comm, stream s, std::string_view collective, F&& f) {
    if constexpr (has_upcoming_tag<C>)
        return guarded_from(comm, comm.upcoming_tag(s), s, collective, std::forward<F>(f));
    else
        return std::forward<F>(f)();
}

// The stream among a call's arguments (its last parameter, defaulted), or
// the default stream.
template <class... Args>
stream stream_among(const Args&... args) {
    stream s{};
    ([&](const auto& a) {
        if constexpr (std::is_same_v<std::decay_t<decltype(a)>, stream>) s = a;
    }(args), ...);
    return s;
}

}  // namespace detail

// An algorithm as a user calls it by its own name (allreduce_ring,
// reduce_chain, ...): Algorithm's call, guarded as a call by the plain name
// is. The registry lists the unguarded Algorithm types, which dispatch runs
// inside its own guard, and the algorithms call each other unguarded
// (Algorithm{}), so one failure revokes its stream once, from the first
// tag of the call the program made.
template <class Algorithm>
struct guarded_algorithm : Algorithm {
    template <class C, class... Args>
    decltype(auto) operator()(C& comm, Args&&... args) const {
        return detail::guarded(
            comm, detail::stream_among(args...), Algorithm::info.collective,
            [&]() -> decltype(auto) { return Algorithm::operator()(comm, std::forward<Args>(args)...); });
    }
};
}  // namespace csp::collectives
