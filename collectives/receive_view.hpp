#pragma once
// Receiving a vector's elements where they arrived.
//
//   cc::receive_view<double>(comm, from, t, [&](std::span<const double> got) {
//       op.fold_into(std::span<double>(mine), got.begin());   // no copy of `got`
//   });
//
// Calls f(std::span<const E>) with the elements of a std::vector<E> (or span
// of E) sent with tag `t`, and returns what f returns. Communicators whose
// messages are bytes (net, hybrid) pass the received message's own bytes;
// the span is valid only inside f. Any other receives the vector and passes
// its elements. For algorithms that fold or copy a received block straight
// into their own buffer instead of decoding it into a new vector first.
#include <algorithm>
#include <cstddef>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "collectives/communicator.hpp"
#include "collectives/operation.hpp"
#include "csp/address_fields.hpp"
#include "net/landing.hpp"
#include "net/loans.hpp"

namespace csp::collectives {

namespace detail {

// Vectors whose elements a receive_view or a relay (relay.hpp) can pass as
// a span: a std::vector (of the default allocator: a message says which
// vector type it carries) of plain data: neither bool nor a pointer, nor a
// struct holding one (csp/address_fields.hpp).
template <class T>
concept element_vector = std::is_same_v<T, std::vector<typename T::value_type>> &&
                         !std::is_same_v<typename T::value_type, bool> &&
                         !holds_address_v<typename T::value_type> &&
                         std::is_trivially_copyable_v<typename T::value_type>;

// Communicators that pass a received vector's elements where they arrived
// (net, hybrid). With them an algorithm folds what arrives straight into
// its own vector and sends spans of that vector (the send encodes them, the
// one copy of a hop); any other moves whole vectors from rank to rank,
// which costs less there than copying blocks in and out.
template <class C, class E>
concept views_in_place = requires(C& c, int r, tag t, void (*f)(std::span<const E>)) {
    c.template receive_view<E>(r, t, f);
};

// A vector T that an algorithm over C folds with op straight from the
// received messages' bytes (op.fold_into / op.fold_before, as combine_into
// folds it), instead of decoding each into a vector first.
template <class C, class T, class Op>
concept folds_from_messages =
    element_vector<T> && views_in_place<C, typename T::value_type> && folds_in_place<Op, T>;

// Elements [lo, hi) of v as a message: a span of them for an element
// vector (the send copies them once, into the message, and the receiver
// gets a std::vector of them, v's own type), else a vector of its own.
template <class T>
auto part_of(const T& v, std::size_t lo, std::size_t hi) {
    if constexpr (element_vector<T>) {
        return std::span<const typename T::value_type>(v.data() + lo, hi - lo);
    } else {
        const auto b = v.begin();
        return T(b + static_cast<std::ptrdiff_t>(lo), b + static_cast<std::ptrdiff_t>(hi));
    }
}

// Parts of at least this many bytes are lent (send_part, below): below it
// a copy costs less than the loan's bookkeeping and the settling wait.
inline constexpr std::size_t lend_from_bytes = 32 * 1024;

// The elements of `part` to `to` (received as a std::vector<E>): lent
// through `book` where the communicator sends bytes and the part is at
// least lend_from_bytes, else copied into the message. The caller leaves
// them alone until book.settle().
template <class C, class E>
void send_elements(C& comm, int to, tag t, std::span<const E> part, net::loans& book) {
    if constexpr (views_in_place<C, E>) {
        if (part.size_bytes() >= lend_from_bytes) {
            comm.send(to, t, book.lend(part));
            return;
        }
    }
    comm.send(to, t, part);
}

// Elements [lo, hi) of v to `to`. A communicator whose messages are bytes
// (net, hybrid) sends a large part from v itself, lent through `book`
// (net/loans.hpp), which copies nothing on this side: the caller must leave
// those elements alone (and v in place) until book.settle(). Otherwise
// part_of: one copy, into the message.
template <class C, class T>
void send_part(C& comm, int to, tag t, const T& v, std::size_t lo, std::size_t hi, net::loans& book) {
    if constexpr (element_vector<T>) {
        send_elements(comm, to, t, std::span<const typename T::value_type>(v.data() + lo, hi - lo), book);
    } else {
        comm.send(to, t, part_of(v, lo, hi));
    }
}

}  // namespace detail

template <class E, class C, class F>
decltype(auto) receive_view(C& comm, int from, tag t, F&& f) {
    if constexpr (requires { comm.template receive_view<E>(from, t, f); }) {
        return comm.template receive_view<E>(from, t, std::forward<F>(f));
    } else {
        const auto v = comm.template receive<std::vector<E>>(from, t);
        return std::forward<F>(f)(std::span<const E>(v));
    }
}

namespace detail {

// combine_into (operation.hpp) with a part that arrives from `from`:
// acc = part_first ? part op acc : acc op part. Folded from the message's
// bytes where folds_from_messages allows, else received as a T first.
template <class C, class T, class Op>
void combine_received(C& comm, int from, tag t, const Op& op, T& acc, bool part_first) {
    if constexpr (folds_from_messages<C, T, Op>) {
        receive_view<typename T::value_type>(comm, from, t, [&](auto got) {
            check_same_length(acc.size(), got.size());
            if (part_first) op.fold_before(acc, got.begin());
            else op.fold_into(acc, got.begin());
        });
    } else {
        combine_into(op, acc, comm.template receive<T>(from, t), part_first);
    }
}

// acc[lo, hi) = acc[lo, hi) op part, the part a vector of hi - lo elements
// from `from`: folded from the message's bytes where folds_from_messages
// allows, else received as a T and combined (an op that acts element by
// element, on the two slices as vectors of their own).
template <class C, class T, class Op>
void fold_received_part(C& comm, int from, tag t, const Op& op, T& acc, std::size_t lo, std::size_t hi) {
    if constexpr (folds_from_messages<C, T, Op>) {
        receive_view<typename T::value_type>(comm, from, t, [&](auto got) {
            check_same_length(hi - lo, got.size());
            std::span<typename T::value_type> mine(acc.data() + lo, hi - lo);
            op.fold_into(mine, got.begin());
        });
    } else {
        const auto first = acc.begin() + static_cast<std::ptrdiff_t>(lo);
        const auto last = acc.begin() + static_cast<std::ptrdiff_t>(hi);
        T mine(first, last);
        combine_into(op, mine, comm.template receive<T>(from, t), false);
        check_same_length(hi - lo, mine.size());
        std::move(mine.begin(), mine.end(), first);
    }
}

// `into` named for the one message from `from` with tag t (a tag of one
// message: a step of a tag next_tag drew), where the communicator can
// (net/landing.hpp: the transport writes the vector straight into it);
// else an empty landing. What is received there is then in place:
// copy_unless_landed skips the copy.
template <class C, class E>
net::landing land(C& comm, int from, tag t, std::span<E> into) {
    if constexpr (requires { comm.land(from, t, into); }) return comm.land(from, t, into);
    else return {};
}

// std::copy of `got` to `to`, unless `got` already is there (it landed).
template <class In, class Out>
void copy_unless_landed(const In& got, Out to) {
    if (std::size(got) == 0 || static_cast<const void*>(std::data(got)) == static_cast<const void*>(&*to)) return;
    std::copy(got.begin(), got.end(), to);
}

// acc[lo, hi) = a vector of hi - lo elements from `from`, copied where it
// arrived where the communicator allows.
template <class C, class T>
void receive_part(C& comm, int from, tag t, T& acc, std::size_t lo, std::size_t hi) {
    auto place = [&](auto got) {
        check_same_length(hi - lo, got.size());
        std::copy(got.begin(), got.end(), acc.begin() + static_cast<std::ptrdiff_t>(lo));
    };
    if constexpr (element_vector<T>) {
        receive_view<typename T::value_type>(comm, from, t, place);
    } else {
        const auto got = comm.template receive<T>(from, t);
        place(got);
    }
}

}  // namespace detail

}  // namespace csp::collectives
