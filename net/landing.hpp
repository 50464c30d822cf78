#pragma once
// A buffer of the receiver's own for one message it is about to receive: a
// payload of the named type that fits is written straight into it by the
// transport, and the message's payload points there, so receiving it into
// that buffer copies nothing (message::into sees the bytes already in
// place).
//
//   auto l = node.land(from, port, tag, std::span<double>(ghost));
//   ... receive the message from `from` with `tag`, into `ghost` ...
//   // l ends: the landing is withdrawn
//
// What must stay true:
//   - (from, port, tag) names one message: no other message from `from` to
//     that port carries the tag (the collectives draw a fresh tag per call,
//     which is why their neighbour exchange and sendrecv can land);
//   - the buffer belongs to the landing while it lives: it may be written
//     at any time, and only by that message;
//   - the landing ends before the buffer goes. Ending it waits while a
//     transport is writing into the buffer (a transfer already under way:
//     UCX fetching bytes the sender holds ready, which on one host ends at
//     once even if the sender died; or a TCP link reading the rest of the
//     payload, until it has it or the connection fails). After it ended,
//     the buffer is the caller's again; a message that landed but was not
//     received still points into it, so it must not be received after the
//     buffer changed (with unique tags nobody does).
// Over TCP the link's reading process reads the payload into the buffer
// (from the socket, or from its read buffer for a frame that came with
// others); over UCX a large payload (64 KiB and more, which UCX sends by
// rendezvous) is fetched there, and a smaller one comes as usual.
//
// A message that comes before its landing is made is received as usual
// (into a block, then copied by the receive), unless it was expected:
//
//   auto e = node.expect(from, port, tag);   // before the peer can send it
//   ... the buffer is still in use ...
//   auto l = node.land(from, port, tag, std::span<double>(ghost));
//
// Over UCX a large expected message that comes first is held, its bytes
// left with the sender, until its landing is made (then fetched into it),
// the expectation ends, another message of that sender comes that is not
// held itself, the landing of a later held one of that sender is made, or
// node_options::expected_hold passes (then fetched as usual); so the
// sender's send completes late by at most that. A sender's expected
// messages sent back to back are each held for their own landing: a
// receiver may take a stream of them into one buffer, naming it for each
// message after the one before was received (the hold of those still
// held then counts from the last landing made). Over TCP, where bytes must
// be read as they come, an expectation does nothing. A neighbour exchange
// expects its next step's rows as it sends this step's
// (collectives/neighbours.hpp).
#include <cstdint>
#include <memory>

namespace csp::net {

namespace detail {
struct node_core;
}

class landing {
public:
    landing() = default;
    landing(landing&& o) noexcept { *this = std::move(o); }
    landing& operator=(landing&& o) noexcept {
        if (this != &o) {
            end();
            core_ = std::move(o.core_);
            peer_ = o.peer_;
            port_ = o.port_;
            tag_ = o.tag_;
            expectation_ = o.expectation_;
            in_ucx_ = o.in_ucx_;
        }
        return *this;
    }
    landing(const landing&) = delete;
    landing& operator=(const landing&) = delete;
    ~landing() { end(); }

    // Withdraws the landing now (see above); idempotent.
    void end() noexcept;

private:
    friend class node;
    landing(std::shared_ptr<detail::node_core> core, int peer, std::uint32_t port, std::uint64_t tag,
            bool expectation, bool in_ucx)
        : core_(std::move(core)), peer_(peer), port_(port), tag_(tag), expectation_(expectation), in_ucx_(in_ucx) {}

    std::shared_ptr<detail::node_core> core_;  // empty: nothing to withdraw
    int peer_ = -1;
    std::uint32_t port_ = 0;
    std::uint64_t tag_ = 0;
    bool expectation_ = false;  // made by node::expect, not node::land
    bool in_ucx_ = false;       // node::land named it to the UCX worker too
};

}  // namespace csp::net
