#pragma once
// The first steps every host-board collective takes (host_board.hpp), and
// how its values become a part's bytes and back.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "collectives/algorithm.hpp"
#include "collectives/communicator.hpp"
#include "collectives/host_board.hpp"
#include "collectives/operation.hpp"
#include "collectives/receive_view.hpp"
#include "collectives/revocation.hpp"
#include "csp/address_fields.hpp"
#include "csp/view.hpp"

namespace csp::collectives::detail {

// Values a host board carries as their bytes: plain data (no address: not
// a pointer, a view, or a struct holding one, whose bytes would carry it)
// and vectors of plain elements.
template <class T>
concept host_board_value = element_vector<T> ||
    (std::is_trivially_copyable_v<T>&& std::is_default_constructible_v<T> && !holds_address_v<T>);

template <class T>
std::span<const std::byte> bytes_of(const T& v) {
    if constexpr (element_vector<T>) return std::as_bytes(std::span(v));
    else return std::as_bytes(std::span<const T, 1>(&v, 1));
}

// The value a part that fits holds (its bytes as a T, see bytes_of).
template <class T>
T value_from_part(const host_board::part& p) {
    T v{};
    if constexpr (element_vector<T>) {
        using E = typename T::value_type;
        const auto* first = reinterpret_cast<const E*>(p.data);
        v.assign(first, first + p.bytes / sizeof(E));
    } else {
        std::memcpy(&v, p.data, sizeof v);
    }
    return v;
}

// A completed meeting: every rank's part of meeting m of the board.
struct host_meeting {
    host_board* board;
    std::uint64_t m;
};

// Throws if rank q's part of a meeting is of another call than this
// rank's part `mine`: another collective, or the same one made earlier or
// later in the stream.
inline void refuse_other_call(const algorithm_info& info, const host_board::part& mine, int q,
                              const host_board::part& theirs) {
    if (theirs.call == mine.call && theirs.sequence == mine.sequence) return;
    const std::string what = theirs.call != mine.call
                                 ? "a call of " + std::string(call_name(theirs.call))
                                 : "its call " + std::to_string(theirs.sequence) + " of the stream (this is call " +
                                       std::to_string(mine.sequence) + ")";
    throw usage_error(std::string(info.collective) + " " + std::string(info.name) + ": rank " + std::to_string(q) +
                      " met this call with " + what + ": " + std::string(same_calls_rule));
}

// The call's tag and, when the stream has a host board (every rank alike),
// one meeting on it with `bytes` of type `type` in this rank's part,
// waited for; nothing without a board (the caller passes messages). A call
// with a root or an op passes them in `args`, which all_fit (or
// refuse_other_args) then compares across the ranks.
template <class C>
std::optional<host_meeting> meet_on_host(C& comm, stream s, const algorithm_info& info, std::uint32_t type,
                                         std::span<const std::byte> bytes, call_args args = {}) {
    const tag t = marked(comm.next_tag(s), info);
    host_board* board = comm.board_on_host(s, t);
    if (board == nullptr) return std::nullopt;
    announce(comm, info, t);
    const std::uint64_t m = board->arrive(type, bytes, t, args);
    board->wait(comm, t, m);
    // Ranks whose calls differ meet all the same (meetings are counted, not
    // tagged): each compares its call with the next rank's, so where they
    // differ some rank throws instead of anyone folding another call's parts
    // (one more cache line per meeting; all_fit reads every part).
    const int next = (comm.rank() + 1) % board->size();
    refuse_other_call(info, board->part_of(m, comm.rank()), next, board->part_of(m, next));
    return host_meeting{board, m};
}

// Throws agreed_error, at every rank alike (each reads every part's head),
// unless every rank passed the same root and op to meeting m: ranks that
// disagree would read a part its writer never filled, or fold with
// different ops.
inline void refuse_other_args(const algorithm_info& info, const host_board& board, std::uint64_t m) {
    const call_args first = board.part_of(m, 0).args;
    for (int q = 1; q < board.size(); ++q)
        refuse_other_args(info.collective, info.name, first, q, board.part_of(m, q).args);
}

// Whether every rank's value of meeting m is in its part. Values of
// another type or length, or other call arguments (refuse_other_args),
// throw agreed_error, at every rank alike (each reads every part's head),
// naming the algorithm `info`: the ranks' calls still pair up, and the
// stream goes on.
template <class T>
bool all_fit(const host_board& board, std::uint64_t m, int me, const algorithm_info& info) {
    const auto mine = board.part_of(m, me);
    std::size_t unit = 1;
    if constexpr (element_vector<T>) unit = sizeof(typename T::value_type);
    bool fit = true;
    const call_args first = board.part_of(m, 0).args;
    for (int q = 0; q < board.size(); ++q) {
        const auto p = board.part_of(m, q);
        refuse_other_call(info, mine, q, p);  // meet_on_host checked one neighbour; every part is read here
        refuse_other_args(info.collective, info.name, first, q, p.args);
        if (p.type != mine.type)
            throw agreed_error(std::string(info.collective) + " " + std::string(info.name) + ": rank " +
                               std::to_string(q) + " passed a value of another type than rank " + std::to_string(me) +
                               "'s " + csp::type_name<T>());
        check_same_length<agreed_error>(mine.bytes / unit, p.bytes / unit);
        fit = fit && p.fits;
    }
    return fit;
}

}  // namespace csp::collectives::detail
