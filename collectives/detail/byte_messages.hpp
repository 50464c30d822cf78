#pragma once
// What the communicators whose messages are bytes (net::message),
// net_communicator and hybrid_communicator, share beyond send(). Because a
// received message is bytes with a type, it can be decoded, viewed where it
// arrived, copied into a caller's buffer, or sent on as it came, and one
// encoding can go to several ranks.
//
// Derived provides (and befriends this class for them):
//   int size() const;
//   take(int from, tag t)                  an envelope: .source, .body (a net::message),
//                                          the message now the caller's
//   void pass(int to, tag t, const net::message& m)   m's bytes and type to rank `to`
#include <cstddef>
#include <span>
#include <string>
#include <utility>

#include "collectives/communicator.hpp"
#include "collectives/mailbox.hpp"
#include "net/codec.hpp"
#include "net/message.hpp"

namespace csp::collectives {
// A revocation, sent as a revocation_notice (revocation.hpp).
template <>
struct revocation_body<net::message> {
    static detail::revocation_notice notice(const net::message& m) {
        try {
            return m.as<detail::revocation_notice>();
        } catch (const std::exception& e) {
            return {-1, std::string("a collective call failed at rank ") + std::to_string(m.source) +
                            " (its revocation was unreadable: " + e.what() + ")"};
        }
    }
};
}  // namespace csp::collectives

namespace csp::collectives::detail {

template <class Derived>
class byte_messages {
public:
    template <class T>
    T receive(int from, tag t) {
        check_rank(from, self().size(), "receive from");
        return self().take(from, t).body.template as<T>();
    }
    template <class T>
    received<T> receive_any(tag t) {
        return receive_any_of<T>(t, {});
    }
    // From any of the ranks `among` (a group's members, the only ranks that
    // send with t; empty: any rank): the failure of another rank does not
    // fail it.
    template <class T>
    received<T> receive_any_of(tag t, std::span<const int> among) {
        auto m = self().take(any_source, t, among);
        return {m.source, m.body.template as<T>()};
    }
    // Into the caller's buffer, without allocating (neighbours.hpp).
    template <class E>
    std::size_t receive_into(int from, tag t, std::span<E> out) {
        check_rank(from, self().size(), "receive from");
        return self().take(from, t).body.into(out);
    }
    // f(elements) where they arrived, without copying them (receive_view.hpp).
    template <class E, class F>
    decltype(auto) receive_view(int from, tag t, F&& f) {
        check_rank(from, self().size(), "receive from");
        const auto m = self().take(from, t);
        return std::forward<F>(f)(m.body.template elements<E>());
    }
    // f(elements) of a vector from `from`, whose message goes on to `to` as
    // it arrived, its bytes shared (relay.hpp). Sent before f runs, so the
    // next hop starts while this one copies.
    template <class E, class F>
    void relay(int from, int to, tag t, F&& f) {
        check_rank(from, self().size(), "receive from");
        check_rank(to, self().size(), "send to");
        const auto m = self().take(from, t);
        const auto got = m.body.template elements<E>();  // a wrong type goes no further
        self().pass(to, t, m.body);
        std::forward<F>(f)(got);
    }
    // value to every rank of `to`, encoded once: the messages share its
    // bytes (detail/peers.hpp).
    template <class T>
    void send_each(std::span<const int> to, tag t, const T& value) {
        check_ranks(to, "send to");
        net::message m;
        m.type = net::wire_type<T>();
        m.body = net::encode(value);
        for (int r : to) self().pass(r, t, m);
    }
    // A T from `from`, whose message goes on to every rank of `to` as it
    // arrived, before it is decoded (relay.hpp).
    template <class T>
    T pass_on(int from, std::span<const int> to, tag t) {
        check_rank(from, self().size(), "receive from");
        check_ranks(to, "send to");
        const auto m = self().take(from, t);
        m.body.template expect_type<T>();  // a wrong type goes no further
        for (int r : to) self().pass(r, t, m.body);
        return m.body.template as<T>();
    }

private:
    Derived& self() { return static_cast<Derived&>(*this); }
    void check_ranks(std::span<const int> ranks, const char* what) {
        for (int r : ranks) check_rank(r, self().size(), what);
    }
};

}  // namespace csp::collectives::detail
