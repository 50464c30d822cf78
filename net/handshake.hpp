#pragma once
// Setting up a link: a challenge-response in which each side proves that it
// knows the job's token, and the token itself never crosses the wire.
//
//   1. connector -> hello(rank c; nonce Nc, limits Lc, job)
//   2. acceptor checks job and rank (0 <= c < size, c != itself)
//      acceptor  -> challenge(rank a; nonce Na, proof Pa, limits La)  or refuse, close
//   3. connector checks Pa (the acceptor knows the token and is rank a)
//      connector -> proof(Pc)                                 or hangs up
//   4. acceptor checks Pc, then asks the switch
//      acceptor  -> welcome                                   or refuse, close
//   5. each side -> transports (transport.cpp); the connector's goes only
//      after it read the welcome, so the acceptor counts the link as made
//      when that frame comes: a connector that timed out before the
//      welcome reached it hangs up without one (an abandoned attempt, not
//      the peer's death)
//
// Pa and Pc are HMACs keyed with the token over the job, both ranks, both
// nonces, both limits (max_frame and window, frame.hpp) and the prover's
// role (auth.hpp); a side trusts the other's limits once its proof checked. Both nonces are fresh per
// connection, so a recorded hello, challenge or proof is useless on any
// other; a side that answers with a wrong proof learns nothing but a refusal.
// What this does not do: it does not encrypt or authenticate the data frames
// that follow. Someone who can read or alter the traffic between two nodes
// can read or alter their messages.
//
// Nothing but these frames passes until the welcome, and both sides read them
// to the exact byte, so data frames that follow a welcome are never
// swallowed by the handshake.
//
// Until a peer has proved the token, frames are limited to 4 KiB, so a
// stranger cannot make the node allocate more than that.
//
// Two nodes that connect to each other at once: the switch keeps the
// connection made by the lower rank and refuses the other with "duplicate";
// the higher rank then waits for the lower rank's connection, which is on its
// way. No data frame was sent on the refused one, so nothing is lost.
#include <memory>
#include <string>

#include "net/detail/node_core.hpp"

namespace csp::net::detail {

inline constexpr std::uint32_t handshake_max_frame = 4096;
inline constexpr const char* duplicate_reason = "duplicate";
// The refusal of a node that is closing: its own state, not the peer's
// fault, so answered without a fault entry.
inline std::string closing_reason(int rank) { return "node " + std::to_string(rank) + " is closing"; }

// The process for one accepted connection: checks the hello, asks the switch,
// answers a refusal itself (a welcome is the link's outbound's first frame).
void run_greeter(std::shared_ptr<node_core> core, unique_fd fd, std::string from);

// The process that sets up the link to `peer`: lookup, connect, hello, and
// the answer, reported to the switch as a connect_result.
void run_connector(std::shared_ptr<node_core> core, int peer);

// The welcome frame this node sends first on an accepted link.
outgoing welcome_frame(const node_core& core);

}  // namespace csp::net::detail
