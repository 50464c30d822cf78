// Bad input on a connection closes that connection with a logged reason, and
// the node goes on serving its other peers. Node 0 and node 1 of a 3-node job
// run in this process; a raw socket plays the stranger (or rank 2).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <numeric>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "net/auth.hpp"
#include "net/frame.hpp"
#include "net/handshake_messages.hpp"
#include "net_fixture.hpp"

using net_test::run_ranks;

namespace {

// A blocking client for the stranger's side.
class raw_client {
public:
    explicit raw_client(const csp::net::endpoint& to) : fd_(net_test::connect_plain(to)) {
        if (fd_ < 0) throw std::runtime_error("connect");
    }
    ~raw_client() {
        if (fd_ >= 0) ::close(fd_);
    }

    void send(const std::vector<std::byte>& bytes) { ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL); }
    // Ends the client's side of the stream (the node reads end of file).
    void finish_sending() { ::shutdown(fd_, SHUT_WR); }
    // Ends the connection with a reset instead (the node reads ECONNRESET).
    void reset() {
        const linger abort_on_close{1, 0};
        ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &abort_on_close, sizeof abort_on_close);
        ::close(fd_);
        fd_ = -1;
    }

    // Reads until end of file; returns what came.
    std::vector<std::byte> read_all() {
        std::vector<std::byte> out;
        std::byte buf[4096];
        ssize_t n;
        while ((n = ::read(fd_, buf, sizeof buf)) > 0) out.insert(out.end(), buf, buf + n);
        return out;
    }
    std::vector<std::byte> read_exactly(std::size_t n) {
        std::vector<std::byte> out(n);
        std::size_t got = 0;
        while (got < n) {
            const ssize_t r = ::read(fd_, out.data() + got, n - got);
            if (r <= 0) break;
            got += static_cast<std::size_t>(r);
        }
        out.resize(got);
        return out;
    }

private:
    int fd_;
};

std::vector<std::byte> frame(csp::net::opcode op, std::uint32_t source, const std::string& body,
                             std::uint32_t length_override = 0) {
    csp::net::header h;
    h.op = op;
    h.source = source;
    h.port = op == csp::net::opcode::data ? 1 : 0;
    h.length = length_override ? length_override : static_cast<std::uint32_t>(body.size());
    std::vector<std::byte> out(csp::net::header::size + body.size());
    h.encode(out.data());
    std::memcpy(out.data() + csp::net::header::size, body.data(), body.size());
    return out;
}

std::string nonce_text(const csp::net::detail::nonce& n) {
    return std::string(reinterpret_cast<const char*>(n.data()), n.size());
}

// The limits the stranger claims: 1 MiB frames, a 1 MiB window.
constexpr csp::net::detail::link_limits stranger_limits{1u << 20, 1u << 20};

// A hello from `as_rank` of job "faults", with a fresh nonce (returned in `ctx`).
std::vector<std::byte> hello(csp::net::detail::handshake_context& ctx, std::uint32_t as_rank = 2) {
    ctx.job = "faults";
    ctx.connector_rank = as_rank;
    ctx.acceptor_rank = 0;
    ctx.connector_nonce = csp::net::detail::fresh_nonce();
    ctx.connector_limits = stranger_limits;
    return frame(csp::net::opcode::hello, as_rank,
                 nonce_text(ctx.connector_nonce) + csp::net::detail::limits_bytes(stranger_limits) + "faults");
}
std::vector<std::byte> hello(std::uint32_t as_rank = 2) {
    csp::net::detail::handshake_context ctx;
    return hello(ctx, as_rank);
}

// Reads the challenge that answers a hello; fills in the acceptor's nonce
// and checks the acceptor's proof against `token`.
bool read_challenge(raw_client& c, csp::net::detail::handshake_context& ctx, const std::string& token) {
    using namespace csp::net::detail;
    const std::size_t size = csp::net::header::size + nonce_size + proof_size + limits_size;
    const auto bytes = c.read_exactly(size);
    if (bytes.size() != size) return false;
    if (csp::net::header::decode(bytes.data(), 4096).op != csp::net::opcode::challenge) return false;
    std::memcpy(ctx.acceptor_nonce.data(), bytes.data() + csp::net::header::size, nonce_size);
    ctx.acceptor_limits = take_limits(
        std::string(reinterpret_cast<const char*>(bytes.data()) + size - limits_size, limits_size), 0);
    proof claimed;
    std::memcpy(claimed.data(), bytes.data() + csp::net::header::size + nonce_size, proof_size);
    return proofs_match(prove(role::acceptor, token, ctx), claimed);
}

std::vector<std::byte> proof_frame(const csp::net::detail::proof& p, std::uint32_t as_rank = 2) {
    return frame(csp::net::opcode::proof, as_rank, std::string(reinterpret_cast<const char*>(p.data()), p.size()));
}

// The reason in a refuse frame, or "" if the bytes are not one.
std::string refusal(const std::vector<std::byte>& bytes) {
    if (bytes.size() < csp::net::header::size) return {};
    const auto h = csp::net::header::decode(bytes.data(), 1 << 20);
    if (h.op != csp::net::opcode::refuse) return {};
    return std::string(reinterpret_cast<const char*>(bytes.data()) + csp::net::header::size, h.length);
}

// Binds `fd` to a free port of 127.0.0.1; returns the port.
std::uint16_t bind_loopback(int fd) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    ::inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    return ntohs(a.sin_port);
}

// Registers rank `rank` of the `n`-node `job` at 127.0.0.1:`port`, as a node
// would; the registration lasts as long as the returned connection.
std::unique_ptr<raw_client> register_as(const csp::net::nameserver& ns, const std::string& job, int rank, int n,
                                        std::uint16_t port) {
    auto c = std::make_unique<raw_client>(ns.address());
    const std::string line = "REGISTER " + job + " " + std::to_string(rank) + " " + std::to_string(n) +
                             " 127.0.0.1 " + std::to_string(port) + "\n";
    c->send(std::vector<std::byte>(reinterpret_cast<const std::byte*>(line.data()),
                                   reinterpret_cast<const std::byte*>(line.data()) + line.size()));
    const std::string expected = "OK " + std::to_string(rank) + " " + std::to_string(n) + "\n";
    const auto ok = c->read_exactly(expected.size());
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(ok.data()), ok.size()), expected);
    return c;
}

// Node 0 and node 1 run; `inject` plays the stranger against node 0 from a
// plain thread. Afterwards node 1 sends node 0 a message, which must arrive.
// `check` looks at node 0 once that message is in; `port_errors` says how many
// peer_errors node 0's port should report on the way.
void with_stranger(const std::function<void(const csp::net::endpoint&)>& inject,
                   const std::function<void(csp::net::node&)>& check, int port_errors,
                   const std::string& expected_in_error = {},
                   const std::function<void(int, csp::net::node_options&)>& configure = {}) {
    csp::net::nameserver ns;
    net_test::captured_log log;
    std::promise<csp::net::endpoint> node0;
    auto node0_at = node0.get_future().share();
    run_ranks(ns, "faults", 3, {0, 1}, [&](csp::net::node& self) {
        auto inbox = self.open(1);
        if (self.rank() == 0) {
            node0.set_value(self.address());
            int errors = 0, values = 0;
            while (values < 1 || errors < port_errors) {
                try {
                    EXPECT_EQ(inbox.receive<int>(), 77);
                    ++values;
                } catch (const csp::net::peer_error& e) {
                    ++errors;
                    EXPECT_EQ(e.peer(), 2);
                    EXPECT_NE(std::string(e.what()).find(expected_in_error), std::string::npos) << e.what();
                }
            }
            EXPECT_EQ(errors, port_errors);
            check(self);
            self.send(1, 1, 1);  // node 1 may go
        } else {
            std::thread stranger([&] { inject(node0_at.get()); });
            stranger.join();
            self.send(0, 1, 77);
            EXPECT_EQ(inbox.receive<int>(), 1);
        }
    }, 1, configure);
}

using net_test::has_fault;

TEST(net_faults, garbage_bytes_are_refused_and_logged) {
    std::string answer;
    with_stranger(
        [&](const csp::net::endpoint& at) {
            raw_client c(at);
            std::vector<std::byte> junk(64, std::byte{0x5a});
            c.send(junk);
            answer = refusal(c.read_all());
        },
        [&](csp::net::node& n) {
            EXPECT_TRUE(has_fault(n, "bad magic 0x5A5A5A5A")) << testing::PrintToString(n.faults());
        },
        0);
    EXPECT_NE(answer.find("bad magic"), std::string::npos) << answer;
}

// Regression: a connection that closed before its first byte was logged as a
// refused fault ("closed after 0 of 32 expected bytes"); a peer whose node
// closed while its connector had just connected (the losing half of a
// crossing) left one in the winner's log. It offered nothing, so nothing is
// refused. One cut inside the hello still is.
TEST(net_faults, a_connection_closed_before_its_first_byte_is_no_fault_one_cut_inside_the_hello_is) {
    std::vector<std::byte> silent, cut;
    with_stranger(
        [&](const csp::net::endpoint& at) {
            raw_client quiet(at);
            quiet.finish_sending();
            silent = quiet.read_all();  // the node closes its end: no refusal
            raw_client half(at);
            half.send(std::vector<std::byte>(10, std::byte{0x43}));
            half.finish_sending();
            cut = half.read_all();
        },
        [&](csp::net::node& n) {
            const auto faults = n.faults();
            ASSERT_EQ(faults.size(), 1u) << testing::PrintToString(faults);
            EXPECT_NE(faults[0].find("closed after 10 of 32 expected bytes"), std::string::npos) << faults[0];
            // Regression: the line named the connection twice ("refused
            // connection from A: connection from A: connection closed ...").
            const auto first = faults[0].find("connection from ");
            ASSERT_NE(first, std::string::npos) << faults[0];
            EXPECT_EQ(faults[0].find("connection from ", first + 1), std::string::npos) << faults[0];
        },
        0);
    EXPECT_TRUE(silent.empty());
    EXPECT_FALSE(cut.empty());  // a refusal frame
}

// Regression: a peer's connector reset (rather than closed) by its node's
// close before its hello was logged as "Connection reset by peer". A reset
// between frames is a hang-up like end of file.
TEST(net_faults, a_connection_reset_before_its_first_byte_is_no_fault) {
    with_stranger(
        [&](const csp::net::endpoint& at) {
            raw_client quiet(at);
            quiet.reset();
            raw_client half(at);  // then one with a cut hello, to know the first was handled
            half.send(std::vector<std::byte>(10, std::byte{0x43}));
            half.finish_sending();
            half.read_all();
        },
        [&](csp::net::node& n) {
            const auto faults = n.faults();
            ASSERT_EQ(faults.size(), 1u) << testing::PrintToString(faults);
            EXPECT_NE(faults[0].find("closed after 10 of 32 expected bytes"), std::string::npos) << faults[0];
        },
        0);
}

// Regression: the fault log kept every entry, so a stranger connecting in a
// loop grew the node's memory without limit.
TEST(net_faults, the_fault_log_keeps_a_bounded_window_and_counts_every_fault) {
    constexpr int strangers = 300;
    with_stranger(
        [&](const csp::net::endpoint& at) {
            for (int i = 0; i < strangers; ++i) {
                raw_client c(at);
                c.send(std::vector<std::byte>(64, std::byte{0x5a}));
                c.read_all();
            }
        },
        [&](csp::net::node& n) {
            const auto kept = n.faults();
            EXPECT_EQ(kept.size(), 256u);
            EXPECT_GE(n.stats().faults, static_cast<std::size_t>(strangers));
            EXPECT_NE(kept.back().find("bad magic"), std::string::npos) << kept.back();
        },
        0);
}

TEST(net_faults, a_wrong_version_is_refused) {
    std::string answer;
    with_stranger(
        [&](const csp::net::endpoint& at) {
            raw_client c(at);
            auto bytes = hello();
            bytes[4] = std::byte{9};
            c.send(bytes);
            answer = refusal(c.read_all());
        },
        [&](csp::net::node& n) { EXPECT_TRUE(has_fault(n, "unsupported frame version 9")); }, 0);
    EXPECT_NE(answer.find("version 9"), std::string::npos) << answer;
}

// The token never crosses the wire: a node proves it knows it by an HMAC
// over fresh nonces, so a guess is refused, and a proof recorded on one
// connection is refused on the next (its nonce differs).
TEST(net_faults, a_wrong_token_or_a_replayed_proof_is_refused) {
    using namespace csp::net::detail;
    std::string wrong, replayed;
    bool acceptor_proved_the_token = false;
    with_stranger(
        [&](const csp::net::endpoint& at) {
            handshake_context first{};
            {
                raw_client c(at);
                c.send(hello(first));
                acceptor_proved_the_token = read_challenge(c, first, "secret");
                c.send(proof_frame(prove(role::connector, "guess", first)));
                wrong = refusal(c.read_all());
            }
            // A proof made with the right token for the first connection,
            // replayed on a second one that repeats the first hello.
            const proof recorded = prove(role::connector, "secret", first);
            raw_client c(at);
            handshake_context second = first;
            c.send(frame(csp::net::opcode::hello, 2,
                         nonce_text(first.connector_nonce) + limits_bytes(stranger_limits) + "faults"));
            read_challenge(c, second, "secret");
            c.send(proof_frame(recorded));
            replayed = refusal(c.read_all());
        },
        [&](csp::net::node& n) { EXPECT_TRUE(has_fault(n, "wrong token")); }, 0);
    EXPECT_TRUE(acceptor_proved_the_token);
    EXPECT_EQ(wrong, "wrong token");
    EXPECT_EQ(replayed, "wrong token");
}

// Reads the node's transports frame after its welcome, as a peer would:
// bytes left unread would make the client's close a reset, which can
// overtake what the client sent last.
void read_transports(raw_client& c) {
    const auto transports = c.read_exactly(csp::net::header::size);
    ASSERT_EQ(transports.size(), csp::net::header::size);
    const auto h = csp::net::header::decode(transports.data(), 1 << 16);
    ASSERT_EQ(h.op, csp::net::opcode::transports);
    c.read_exactly(h.length);
}

TEST(net_faults, the_token_is_not_sent_in_any_handshake_frame) {
    using namespace csp::net::detail;
    std::vector<std::byte> seen;
    with_stranger(
        [&](const csp::net::endpoint& at) {
            raw_client c(at);
            handshake_context ctx{};
            c.send(hello(ctx));
            read_challenge(c, ctx, "secret");
            c.send(proof_frame(prove(role::connector, "secret", ctx)));
            seen = c.read_exactly(csp::net::header::size);  // the welcome
            read_transports(c);
            c.send(frame(csp::net::opcode::transports, 2, ""));
            c.send(frame(csp::net::opcode::goodbye, 2, ""));
        },
        [](csp::net::node&) {}, 0);
    ASSERT_EQ(seen.size(), csp::net::header::size);
    const auto h = csp::net::header::decode(seen.data(), 4096);
    EXPECT_EQ(h.op, csp::net::opcode::welcome);
    EXPECT_EQ(h.length, 0u);
}

// Regression: the token went in clear to whatever address the nameserver
// returned, so a local user who registered a peer's rank first captured it.
// Now the connecting node sends only a nonce and the job, checks the
// answer's proof, and hangs up on an impostor without proving anything.
TEST(net_faults, a_node_proves_nothing_to_an_impostor_that_registered_a_peers_rank) {
    using namespace csp::net::detail;
    csp::net::nameserver ns;
    net_test::captured_log log;
    const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
    const std::uint16_t port = bind_loopback(listener);
    ASSERT_EQ(::listen(listener, 4), 0);
    const auto held = register_as(ns, "impostor", 1, 2, port);  // the impostor's registration
    std::string heard;           // everything the impostor received
    std::size_t after_challenge = 0;
    std::thread impostor([&] {
        const int fd = ::accept(listener, nullptr, nullptr);
        std::byte head[csp::net::header::size];
        ::recv(fd, head, sizeof head, MSG_WAITALL);
        const auto h = csp::net::header::decode(head, 4096);
        heard.resize(h.length);
        ::recv(fd, heard.data(), heard.size(), MSG_WAITALL);
        const nonce n = fresh_nonce();
        const proof bogus = {};
        std::string body(reinterpret_cast<const char*>(n.data()), n.size());
        body.append(reinterpret_cast<const char*>(bogus.data()), bogus.size());
        body += limits_bytes(stranger_limits);
        const auto challenge = frame(csp::net::opcode::challenge, 1, body);
        ::send(fd, challenge.data(), challenge.size(), MSG_NOSIGNAL);
        char buf[256];
        ssize_t got;
        while ((got = ::read(fd, buf, sizeof buf)) > 0) after_challenge += static_cast<std::size_t>(got);
        ::close(fd);
    });
    run_ranks(ns, "impostor", 2, {0}, [&](csp::net::node& self) {
        auto inbox = self.open(1);
        self.send(1, 1, 42);
        net_test::expect_peer_error(inbox, 1, "does not know this job's token");
    });
    impostor.join();
    ::close(listener);
    EXPECT_EQ(heard.size(), nonce_size + limits_size + std::string("impostor").size());
    EXPECT_EQ(heard.find("secret"), std::string::npos);
    EXPECT_EQ(after_challenge, 0u) << "the node answered an impostor's challenge";
}

// Ranks -1 (0xFFFFFFFF on the wire) and size are not peers; nor is a
// header with flags or reserved fields set.
TEST(net_faults, a_hello_with_a_bad_rank_flags_or_reserved_field_is_refused) {
    std::vector<std::string> answers;
    with_stranger(
        [&](const csp::net::endpoint& at) {
            for (int variant = 0; variant < 5; ++variant) {
                raw_client c(at);
                auto bytes = variant == 0   ? hello(0xFFFFFFFFu)
                             : variant == 1 ? hello(3)
                             : variant == 2 ? hello(0)
                                            : hello();
                if (variant == 3) bytes[6] = std::byte{1};   // flags
                if (variant == 4) bytes[20] = std::byte{7};  // type, reserved in a hello
                c.send(bytes);
                answers.push_back(refusal(c.read_all()));
            }
        },
        [](csp::net::node& n) {
            EXPECT_TRUE(has_fault(n, "claims rank 4294967295"));
            EXPECT_TRUE(has_fault(n, "flags 0x00000001 set"));
        },
        0);
    ASSERT_EQ(answers.size(), 5u);
    EXPECT_NE(answers[0].find("claims rank 4294967295, which is not a peer"), std::string::npos) << answers[0];
    EXPECT_NE(answers[1].find("claims rank 3"), std::string::npos) << answers[1];
    EXPECT_NE(answers[2].find("claims rank 0"), std::string::npos) << answers[2];
    EXPECT_NE(answers[3].find("flags 0x00000001 set (reserved, must be 0)"), std::string::npos) << answers[3];
    EXPECT_NE(answers[4].find("must be 0 in a control frame"), std::string::npos) << answers[4];
}

TEST(net_faults, an_oversized_hello_is_refused_before_anything_is_allocated) {
    std::string answer;
    with_stranger(
        [&](const csp::net::endpoint& at) {
            raw_client c(at);
            c.send(frame(csp::net::opcode::hello, 2, "", 0x7fffffff));
            answer = refusal(c.read_all());
        },
        [&](csp::net::node& n) { EXPECT_TRUE(has_fault(n, "oversized frame")); }, 0);
    EXPECT_NE(answer.find("exceeds the maximum of 4096"), std::string::npos) << answer;
}

// After a valid handshake as rank 2 and a transports frame offering TCP
// only (unless `offer` is false), send `after` and hang up.
void as_rank_2(const csp::net::endpoint& at, const std::vector<std::byte>& after, bool offer = true) {
    using namespace csp::net::detail;
    raw_client c(at);
    handshake_context ctx{};
    c.send(hello(ctx));
    ASSERT_TRUE(read_challenge(c, ctx, "secret"));
    c.send(proof_frame(prove(role::connector, "secret", ctx)));
    const auto welcome = c.read_exactly(csp::net::header::size);
    ASSERT_EQ(welcome.size(), csp::net::header::size);
    ASSERT_EQ(csp::net::header::decode(welcome.data(), 4096).op, csp::net::opcode::welcome);
    read_transports(c);
    if (offer) c.send(frame(csp::net::opcode::transports, 2, ""));
    c.send(after);
}

// Regression: a node that stalled while a peer's connector waited for its
// welcome accepted that connection once it resumed, after the connector had
// timed out and hung up; the end before the peer's transports frame read as
// the peer's death, so the node declared the peer lost and refused its next
// connection. Now an accepted connection that ends before the peer's first
// frame is an abandoned attempt: the link waits for the peer's next
// connection, with no fault and no error at any port. Rank 2 abandons two
// connections after its proof (one closed after reading the welcome, one
// reset before), then makes a third and leaves over it with a goodbye.
TEST(net_faults, a_connection_abandoned_after_the_handshake_is_no_loss_and_the_next_one_is_taken) {
    using namespace csp::net::detail;
    std::vector<std::byte> answer_to_goodbye;
    bool third_welcomed = false;
    const auto handshake = [](raw_client& c) {
        handshake_context ctx{};
        c.send(hello(ctx));
        if (!read_challenge(c, ctx, "secret")) return false;
        c.send(proof_frame(prove(role::connector, "secret", ctx)));
        return true;
    };
    const auto welcomed = [](raw_client& c) {
        const auto welcome = c.read_exactly(csp::net::header::size);
        return welcome.size() == csp::net::header::size &&
               csp::net::header::decode(welcome.data(), 4096).op == csp::net::opcode::welcome;
    };
    const auto stranger = [&](const csp::net::endpoint& at) {
        {
            raw_client c(at);
            ASSERT_TRUE(handshake(c));
            ASSERT_TRUE(welcomed(c));
            read_transports(c);
            c.finish_sending();  // the node reads end of file where the transports frame belongs
            EXPECT_TRUE(c.read_all().empty());  // and sends nothing more
        }
        {
            raw_client c(at);
            ASSERT_TRUE(handshake(c));
            c.reset();
        }
        // Until the node has seen the last one end, its link is up and a
        // new connection is refused as a crossing's loser ("duplicate"):
        // a higher rank tries again after a while, and so does this one.
        for (int attempt = 0; attempt < 40 && !third_welcomed; ++attempt) {
            raw_client c(at);
            ASSERT_TRUE(handshake(c));
            if (!welcomed(c)) {
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
                continue;
            }
            third_welcomed = true;
            read_transports(c);
            c.send(frame(csp::net::opcode::transports, 2, ""));
            c.send(frame(csp::net::opcode::goodbye, 2, ""));
            c.finish_sending();
            answer_to_goodbye = c.read_all();
        }
    };
    with_stranger(
        [&](const csp::net::endpoint& at) {
            try {
                stranger(at);
            } catch (const std::exception& e) {  // a refusal where a frame of the handshake belongs
                ADD_FAILURE() << "rank 2's connections were not answered as a peer's: " << e.what();
            }
        },
        [](csp::net::node& n) {
            EXPECT_EQ(n.stats().abandoned, 2u);
            for (const std::string& f : n.faults()) EXPECT_EQ(f.find("node 2"), std::string::npos) << f;
        },
        0);
    EXPECT_TRUE(third_welcomed);
    ASSERT_EQ(answer_to_goodbye.size(), csp::net::header::size);
    EXPECT_EQ(csp::net::header::decode(answer_to_goodbye.data(), 4096).op, csp::net::opcode::goodbye);
}

// Regression: a node left with a link only an abandoned connection ever
// made (the peer did not come back) waited out its whole linger at close
// for that link to settle, and then logged the peer as lost. It closes at
// once now, with no fault: there was nothing to deliver and no goodbye owed.
TEST(net_faults, a_node_whose_peer_abandoned_its_only_connection_closes_promptly_without_a_fault) {
    using namespace csp::net::detail;
    csp::net::nameserver ns;
    net_test::captured_log log;
    std::promise<csp::net::endpoint> node0;
    std::jthread stranger([at = node0.get_future()]() mutable {
        raw_client c(at.get());
        handshake_context ctx{};
        c.send(hello(ctx));
        ASSERT_TRUE(read_challenge(c, ctx, "secret"));
        c.send(proof_frame(prove(role::connector, "secret", ctx)));
        c.read_exactly(csp::net::header::size);  // the welcome
        read_transports(c);
        c.finish_sending();
        c.read_all();
    });
    std::vector<std::string> faults;
    std::chrono::steady_clock::duration closing{};
    run_ranks(ns, "faults", 3, {0}, [&](csp::net::node& self) {
        node0.set_value(self.address());
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (self.stats().abandoned == 0 && std::chrono::steady_clock::now() < until)
            csp::sleep_for(std::chrono::milliseconds(5));
        EXPECT_EQ(self.stats().abandoned, 1u);
        const auto start = std::chrono::steady_clock::now();
        self.close();
        closing = std::chrono::steady_clock::now() - start;
        faults = self.faults();
    });
    stranger.join();  // it reads to the end of file the close sent (a throw above joins it too)
    EXPECT_LT(closing, std::chrono::seconds(2));  // the linger is 10 s
    for (const std::string& f : faults) EXPECT_EQ(f.find("node 2"), std::string::npos) << f;
}

// Regression: a node whose link to a higher rank was between two attempts
// (the last one failed, the next one minutes of backoff away) refused that
// rank's own connection as the losing half of a crossing, so the higher rank
// waited for a connection that was not coming and failed the link after one
// connect_timeout. Now only an attempt under way wins a crossing. Rank 1 is
// registered at a port that refuses, so node 0's attempts fail at once and
// it is between attempts nearly all the time; rank 1's connection, tried
// again after each "duplicate" as a higher rank does, must be taken, and
// carry the message node 0 queued for it.
TEST(net_faults, a_node_between_two_attempts_takes_the_higher_ranks_connection) {
    using namespace csp::net::detail;
    csp::net::nameserver ns;
    net_test::captured_log log;
    const int unused = ::socket(AF_INET, SOCK_STREAM, 0);
    const std::uint16_t port = bind_loopback(unused);  // nothing listens there: connects are refused
    ::close(unused);
    const auto registration = register_as(ns, "faults", 1, 2, port);  // rank 1's
    std::promise<csp::net::endpoint> node0;
    int duplicates = 0;
    bool taken = false;
    csp::net::header first{};
    std::thread rank1([&, at = node0.get_future()]() mutable {
        const csp::net::endpoint to = at.get();
        std::this_thread::sleep_for(std::chrono::milliseconds(300));  // node 0 has failed a few attempts
        for (int attempt = 0; attempt < 40 && !taken; ++attempt) {
            raw_client c(to);
            handshake_context ctx{};
            c.send(hello(ctx, 1));
            ASSERT_TRUE(read_challenge(c, ctx, "secret"));
            c.send(proof_frame(prove(role::connector, "secret", ctx), 1));
            // The switch decides after the proof: a welcome, or a refusal.
            const auto answer = c.read_exactly(csp::net::header::size);
            ASSERT_EQ(answer.size(), csp::net::header::size);
            if (csp::net::header::decode(answer.data(), 4096).op != csp::net::opcode::welcome) {
                ++duplicates;  // try again, as the switch of a higher rank does
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
                continue;
            }
            taken = true;
            read_transports(c);
            c.send(frame(csp::net::opcode::transports, 1, ""));
            const auto head = c.read_exactly(csp::net::header::size);
            ASSERT_EQ(head.size(), csp::net::header::size);
            first = csp::net::header::decode(head.data(), 1 << 20);
            c.read_exactly(first.length);
            c.send(frame(csp::net::opcode::goodbye, 1, ""));
            c.finish_sending();
            c.read_all();
        }
    });
    try {
        run_ranks(ns, "faults", 2, {0}, [&](csp::net::node& self) {
            node0.set_value(self.address());
            auto inbox = self.open(1);
            self.send(1, 1, 42);
            net_test::expect_peer_error(inbox, 1, "has left");
        }, 1, [](int, csp::net::node_options& o) { o.liveness_timeout = std::chrono::seconds(5); });
    } catch (...) {
        rank1.join();
        throw;
    }
    rank1.join();
    EXPECT_TRUE(taken) << duplicates << " connections refused as the losing half of a crossing";
    EXPECT_EQ(first.op, csp::net::opcode::data);
    EXPECT_EQ(first.port, 1u);
}

// Regression: a higher rank whose connection lost a crossing waited one
// connect_timeout for the lower rank's, then declared the lower rank lost,
// though a stall there is no more a death than a connect that timed out.
// Now it tries again until the liveness timeout. Rank 0 here answers every
// hello with "duplicate" and never connects back.
TEST(net_faults, a_lost_crossing_whose_winner_never_comes_is_retried_until_the_liveness_timeout) {
    csp::net::nameserver ns;
    net_test::captured_log log;
    const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    const std::uint16_t port = bind_loopback(listener);
    ASSERT_EQ(::listen(listener, 16), 0);
    const auto registration = register_as(ns, "faults", 0, 2, port);  // rank 0's
    std::atomic<bool> done{false};
    std::atomic<int> hellos{0};
    std::thread rank0([&] {
        while (!done.load()) {
            const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
            if (fd < 0) {
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
                continue;
            }
            std::byte head[csp::net::header::size];
            if (::recv(fd, head, sizeof head, MSG_WAITALL) == static_cast<ssize_t>(sizeof head)) {
                std::string body(csp::net::header::decode(head, 4096).length, '\0');
                ::recv(fd, body.data(), body.size(), MSG_WAITALL);
                const auto refusal = frame(csp::net::opcode::refuse, 0, "duplicate");
                ::send(fd, refusal.data(), refusal.size(), MSG_NOSIGNAL);
                ++hellos;
            }
            ::close(fd);
        }
    });
    std::chrono::steady_clock::duration took{};
    try {
        run_ranks(ns, "faults", 2, {1}, [&](csp::net::node& self) {
            auto inbox = self.open(1);
            const auto start = std::chrono::steady_clock::now();
            self.send(0, 1, 42);
            net_test::expect_peer_error(inbox, 0, "its connection to this node never arrived");
            took = std::chrono::steady_clock::now() - start;
        }, 1, [](int, csp::net::node_options& o) {
            o.connect_timeout = std::chrono::milliseconds(200);
            o.liveness_timeout = std::chrono::milliseconds(1500);
        });
    } catch (...) {
        done = true;
        rank0.join();
        ::close(listener);
        throw;
    }
    done = true;
    rank0.join();
    ::close(listener);
    EXPECT_GE(hellos.load(), 3);  // tried again after each wait
    EXPECT_GE(took, std::chrono::milliseconds(1500));
    EXPECT_LT(took, std::chrono::seconds(10));
}

// A frame where the transports frame must come names what came instead, and
// ends that link only.
TEST(net_faults, a_data_frame_where_the_transports_frame_belongs_ends_that_link_only) {
    with_stranger([](const csp::net::endpoint& at) { as_rank_2(at, frame(csp::net::opcode::data, 2, "abcd"), false); },
                  [](csp::net::node& n) { EXPECT_TRUE(has_fault(n, "expected the transports frame")); }, 1,
                  "expected the transports frame after the handshake, got a data frame");
}

// A stranger that proved the token and offers a UCX address that is not
// one: the link fails naming the malformed frame, and the node goes on.
TEST(net_faults, a_transports_frame_with_a_bad_ucx_address_ends_that_link_only) {
    with_stranger(
        [](const csp::net::endpoint& at) {
            as_rank_2(at, frame(csp::net::opcode::transports, 2, "not an address"), false);
        },
        [](csp::net::node& n) { EXPECT_TRUE(has_fault(n, "malformed transports frame")); }, 1,
        "malformed transports frame");
}

// The nodes' max_frame set below a frame's largest length (the default is
// the largest): a header claiming more ends that link.
TEST(net_faults, an_oversized_data_frame_ends_that_link_only) {
    with_stranger([](const csp::net::endpoint& at) { as_rank_2(at, frame(csp::net::opcode::data, 2, "", 1u << 30)); },
                  [](csp::net::node& n) { EXPECT_TRUE(has_fault(n, "oversized frame")); }, 1, "oversized frame",
                  [](int, csp::net::node_options& o) { o.max_frame = 64u << 20; });
}

TEST(net_faults, a_truncated_frame_ends_that_link_only) {
    with_stranger(
        [](const csp::net::endpoint& at) {
            auto f = frame(csp::net::opcode::data, 2, std::string(100, 'x'));
            f.resize(csp::net::header::size + 40);
            as_rank_2(at, f);
        },
        [](csp::net::node& n) { EXPECT_TRUE(has_fault(n, "truncated frame")); }, 1,
        "truncated frame: the connection closed after 72 bytes of a frame");
}

TEST(net_faults, a_frame_with_a_wrong_version_after_the_handshake_ends_that_link) {
    with_stranger(
        [](const csp::net::endpoint& at) {
            auto f = frame(csp::net::opcode::data, 2, "abcd");
            f[4] = std::byte{1};
            as_rank_2(at, f);
        },
        [](csp::net::node& n) { EXPECT_TRUE(has_fault(n, "unsupported frame version 1")); }, 1,
        "unsupported frame version 1");
}

TEST(net_faults, a_node_killed_mid_stream_fails_receives_and_sends_but_not_other_links) {
    csp::net::nameserver ns;
    net_test::captured_log log;
    const pid_t pid = net_test::spawn_node(NET_TEST_PEER, {}, ns, "killed", 1, 3);

    run_ranks(ns, "killed", 3, {0, 2}, [&](csp::net::node& self) {
        auto inbox = self.open(1);
        if (self.rank() == 2) {
            EXPECT_EQ(inbox.receive<std::uint64_t>(), 5u);  // node 0 has seen node 1 die
            self.send(0, 1, std::uint64_t{6});
            return;
        }
        std::uint64_t expect = 0;
        for (; expect < 1000; ++expect) ASSERT_EQ(inbox.receive<std::uint64_t>(), expect);
        ::kill(pid, SIGKILL);
        try {
            for (;; ++expect) ASSERT_EQ(inbox.receive<std::uint64_t>(), expect);  // in order up to the end
        } catch (const csp::net::peer_error& e) {
            EXPECT_EQ(e.peer(), 1);
            EXPECT_NE(std::string(e.what()).find("lost node 1 of job 'killed'"), std::string::npos) << e.what();
        }
        EXPECT_THROW(self.send(1, 1, std::uint64_t{0}), csp::net::peer_error);
        self.send(2, 1, std::uint64_t{5});
        EXPECT_EQ(inbox.receive<std::uint64_t>(), 6u);
    });
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status));
}

// Regression: a peer that died (no goodbye) was known lost over UCX only
// goodbye_grace (2 s) after its connection ended, where TCP knows at once: a
// collective call's survivors waited 2 s for the error. A leaving node now
// marks its connection's end once its goodbye is flushed, and an end without
// the mark is a death at once; the messages the peer sent before it died
// still reach the port ahead of the loss (they wait in this node's worker,
// taken in before the loss is reported).
TEST(net_faults, a_dead_peers_last_messages_arrive_before_its_loss_which_is_known_at_once) {
    csp::net::nameserver ns;
    net_test::captured_log log;
    constexpr std::uint64_t n = 40;
    const pid_t pid = net_test::spawn_ready_node(NET_TEST_PEER, {"burst", std::to_string(n)}, ns, "burst", 1, 2);
    int status = 0;
    std::vector<std::uint64_t> got;
    std::string error;
    double lost_after_ms = -1;
    std::size_t over_ucx = 0;
    run_ranks(ns, "burst", 2, {0}, [&](csp::net::node& self) {
        auto inbox = self.open(1);
        self.send(1, 1, std::uint64_t{7});
        EXPECT_EQ(self.open(2).receive<std::uint64_t>(), 7u);
        over_ucx = self.stats().links_over_ucx;
        // The node's only thread waits for the peer's death: nothing here
        // takes the burst in before the connection's end is there to see.
        ::waitpid(pid, &status, 0);
        const auto dead = std::chrono::steady_clock::now();
        try {
            for (;;) got.push_back(inbox.receive<std::uint64_t>());
        } catch (const csp::net::peer_error& e) {
            EXPECT_EQ(e.peer(), 1);
            error = e.what();
        }
        lost_after_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - dead).count();
    });
    EXPECT_TRUE(WIFEXITED(status));
    std::vector<std::uint64_t> sent(n);
    std::iota(sent.begin(), sent.end(), 0);
    EXPECT_EQ(got, sent);
    EXPECT_NE(error.find("without a goodbye (the node died or was killed)"), std::string::npos) << error;
    EXPECT_GE(lost_after_ms, 0.0);
    EXPECT_LT(lost_after_ms, 1000.0) << "the loss waited for a goodbye that cannot come";
    const char* transport = std::getenv("CSP_TRANSPORT");
    const bool tcp_only = !CSP_TEST_WITH_UCX || (transport != nullptr && std::string(transport) == "tcp");
    EXPECT_EQ(over_ucx, tcp_only ? 0u : 1u);
}

// Regression: a peer killed while bytes sent to it were still unread closes
// its socket with a reset, and its loss read "reading from the connection:
// Connection reset by peer" (or "fd 12: error condition (POLLERR:
// Connection reset by peer) while waiting to read"), where a death seen as
// an end of file said what happened. A reset now says the node died too.
TEST(net_faults, a_peer_killed_with_bytes_unread_is_reported_as_dead_not_as_a_reset) {
    csp::net::nameserver ns;
    net_test::captured_log log;
    const pid_t pid = net_test::spawn_ready_node(NET_TEST_PEER, {"hold"}, ns, "reset", 1, 2);
    run_ranks(ns, "reset", 2, {0}, [&](csp::net::node& self) {
        auto back = self.open(2);
        self.send(1, 1, std::uint64_t{7});
        EXPECT_EQ(back.receive<std::uint64_t>(), 7u);  // the link is up both ways
        ::kill(pid, SIGSTOP);
        // Its node reads nothing now: these stay in its socket (or, over
        // UCX, its shared memory), unread, when it dies.
        for (int i = 0; i < 64; ++i) self.send(1, 3, std::vector<double>(512, 1.0));
        csp::sleep_for(std::chrono::milliseconds(50));
        ::kill(pid, SIGKILL);
        net_test::expect_peer_error(back, 1, "(the node died or was killed");
    });
    ::waitpid(pid, nullptr, 0);
}

// A peer killed in the middle of a fast stream: the receiver gets the stream
// in order up to the loss, then the loss, and nothing of that peer after it
// (what the peer sent before it died went to the port first).
TEST(net_faults, nothing_of_a_peer_killed_mid_stream_arrives_after_its_loss) {
    for (int round = 0; round < 3; ++round) {
        csp::net::nameserver ns;
        net_test::captured_log log;
        const pid_t pid = net_test::spawn_node(NET_TEST_PEER, {}, ns, "stream-killed", 1, 2);
        std::uint64_t next = 0;
        std::string after;
        run_ranks(ns, "stream-killed", 2, {0}, [&](csp::net::node& self) {
            auto inbox = self.open(1);
            for (; next < 3000; ++next) ASSERT_EQ(inbox.receive<std::uint64_t>(), next);
            ::kill(pid, SIGKILL);
            try {
                for (;; ++next) ASSERT_EQ(inbox.receive<std::uint64_t>(), next);
            } catch (const csp::net::peer_error& e) {
                EXPECT_EQ(e.peer(), 1);
            }
            // A number that came after the loss would be taken first; with
            // no node left to send, the port then stays failed.
            csp::net::message m;
            try {
                if (csp::select(csp::net::input(inbox, m), csp::timeout(std::chrono::milliseconds(300))) == 0)
                    after = "number " + std::to_string(m.as<std::uint64_t>()) + " after the loss";
                else
                    after = "a port with no sender left waited for its timeout";
            } catch (const csp::net::peer_error& e) {
                EXPECT_EQ(e.peer(), 1);
            }
        });
        ::waitpid(pid, nullptr, 0);
        EXPECT_EQ(after, "") << "round " << round << ", " << next << " numbers before the loss";
    }
}

// Regression: sends accepted just before a peer's loss was known, still on
// their way to its link, were each logged as a fault of their own ("a
// message to port 13 of node 3 ... was not sent", 1,642 lines from one
// node of a 4-node job whose 8 processes streamed to every peer), flooding
// the log and pushing the loss itself out of node::faults(). Now each link
// logs the first, counts the rest in node_stats::unsent, and sums them up
// in one line when the node closes.
TEST(net_faults, sends_on_their_way_to_a_lost_peer_are_counted_not_logged_one_by_one) {
    // A round tells only if the senders posted before the loss was known:
    // one whose first sends already threw is run again.
    for (int round = 0; round < 5; ++round) {
        csp::net::nameserver ns;
        net_test::captured_log log;
        const pid_t pid = net_test::spawn_ready_node(NET_TEST_PEER, {"receive", "100000000"}, ns, "unsent", 1, 2);
        csp::net::node_stats st;
        std::vector<std::string> faults;
        std::atomic<std::size_t> refused{0};  // sends that threw: the loss was known by then
        run_ranks(ns, "unsent", 2, {0}, [&](csp::net::node& self) {
            // Killed as the senders start: they stream into the link's
            // set-up while the loss comes in through the nameserver.
            ::kill(pid, SIGKILL);
            csp::par_for(8, [&](std::size_t) {
                for (std::uint64_t i = 0; i < 200000; ++i) {
                    try {
                        self.send(1, 1, i);
                    } catch (const csp::net::peer_error&) {
                        ++refused;
                        return;
                    }
                }
            });
            self.close();
            faults = self.faults();
            st = self.stats();
        }, 2);  // the senders post while the switch takes the loss in
        ::waitpid(pid, nullptr, 0);
        EXPECT_EQ(refused, 8u);  // every sender heard of the loss
        if (st.unsent == 0) continue;
        std::size_t logged_one_by_one = 0;
        for (const std::string& line : log.lines())
            if (line.find("was not sent: lost node 1") != std::string::npos) ++logged_one_by_one;
        EXPECT_LE(logged_one_by_one, 1u);
        // The loss itself is still in the node's faults.
        EXPECT_TRUE(std::any_of(faults.begin(), faults.end(), [](const std::string& f) {
            return f.rfind("lost node 1 of job 'unsent'", 0) == 0;
        })) << testing::PrintToString(faults);
        // What the log says adds up to the count: the messages queued at the
        // loss, the first refused after it, the rest summed up at close.
        std::size_t queued = 0, more = 0;
        for (const std::string& line : log.lines()) {
            if (const auto at = line.find(" queued messages to it were not sent"); at != std::string::npos)
                queued = std::stoul(line.substr(line.rfind('(', at) + 1));
            if (const auto at = line.find(" more messages to node 1 of job 'unsent' were not sent after the first");
                at != std::string::npos)
                more = std::stoul(line.substr(line.rfind(' ', at - 1) + 1));
        }
        EXPECT_EQ(queued + logged_one_by_one + more, st.unsent) << testing::PrintToString(log.lines());
        return;
    }
    ADD_FAILURE() << "in 5 rounds the loss was always known before the first send";
}

// Rank 1 of a 2-node job in its own process, receiving `n` numbers; returns
// its pid once it has registered.
pid_t spawn_receiver(const csp::net::nameserver& ns, const std::string& job, std::uint64_t n) {
    return net_test::spawn_ready_node(NET_TEST_PEER, {"receive", std::to_string(n)}, ns, job, 1, 2);
}

// Stops process `pid` now and resumes it `after` from now, or sooner when
// the returned thread is joined (its destructor joins it: the peer is
// resumed also when a test fails). Join before reaping the peer.
std::jthread stall(pid_t pid, std::chrono::milliseconds after) {
    ::kill(pid, SIGSTOP);
    return std::jthread([pid, after](std::stop_token stop) {
        std::mutex m;
        std::condition_variable_any cv;
        std::unique_lock lock(m);
        cv.wait_for(lock, stop, after, [] { return false; });
        ::kill(pid, SIGCONT);
    });
}

// Regression: a peer stalled (SIGSTOP) while its link was being set up was
// cut off for good when the connect timed out, and every queued message to
// it was dropped. Now the set-up is retried with backoff and the queue kept.
TEST(net_faults, a_peer_stalled_during_link_setup_gets_every_queued_message_once_it_resumes) {
    csp::net::nameserver ns;
    net_test::captured_log log;
    constexpr std::uint64_t n = 100000;
    const pid_t pid = spawn_receiver(ns, "stalled", n);
    std::jthread resume;
    auto o = net_test::options_for(ns, "stalled", 0, 2);
    o.connect_timeout = std::chrono::milliseconds(500);  // several attempts time out during the stall
    csp::run([&] {
        csp::net::node self(o);
        auto answer = self.open(2);
        // Stopped once this node is up (links are set up at the first
        // send): the stall covers the set-up however long the node took to
        // start on a loaded machine.
        resume = stall(pid, std::chrono::seconds(3));
        for (std::uint64_t i = 0; i < n; ++i) self.send(1, 1, i);
        EXPECT_EQ(answer.receive<std::uint64_t>(), n);  // every one, in order
        EXPECT_TRUE(has_fault(self, "retrying for up to")) << testing::PrintToString(self.faults());
    });
    resume.join();
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

// Regression: a node that closed while the link to a stalled peer was being
// set up failed the link at the first attempt that timed out, so the queued
// messages were lost and close() logged the peer as lost. Now close()
// completes the link within its linger, retrying as an open node does.
TEST(net_faults, a_node_closing_while_a_stalled_peers_link_is_set_up_delivers_within_its_linger) {
    csp::net::nameserver ns;
    net_test::captured_log log;
    constexpr std::uint64_t n = 1000;
    const pid_t pid =
        net_test::spawn_ready_node(NET_TEST_PEER, {"count", std::to_string(n)}, ns, "closing-stalled", 1, 2);
    std::jthread resume;
    auto o = net_test::options_for(ns, "closing-stalled", 0, 2);
    o.connect_timeout = std::chrono::milliseconds(300);  // several attempts time out during the stall
    o.linger = std::chrono::seconds(8);
    csp::run([&] {
        csp::net::node self(o);
        resume = stall(pid, std::chrono::milliseconds(1500));  // once this node is up, as above
        for (std::uint64_t i = 0; i < n; ++i) self.send(1, 1, i);
        const auto start = std::chrono::steady_clock::now();
        self.close();
        EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(7));
        EXPECT_FALSE(has_fault(self, "lost node 1")) << testing::PrintToString(self.faults());
        EXPECT_TRUE(has_fault(self, "retrying for up to")) << testing::PrintToString(self.faults());
    });
    resume.join();
    int status = -1;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

// ... and one whose peer stays stalled past the linger gives that link up
// when the linger ends, however long its liveness timeout: the retries
// while closing stop there (the linger's deadline, moved on afterwards to
// pace the switch's checks, does not count as more linger).
TEST(net_faults, a_node_closing_while_its_peer_stays_stalled_gives_up_the_link_when_its_linger_ends) {
    csp::net::nameserver ns;
    net_test::captured_log log;
    const pid_t pid = net_test::spawn_ready_node(NET_TEST_PEER, {"count", "1"}, ns, "closing-stalled-long", 1, 2);
    std::jthread resume = stall(pid, std::chrono::seconds(12));
    auto o = net_test::options_for(ns, "closing-stalled-long", 0, 2);
    o.connect_timeout = std::chrono::milliseconds(200);
    o.liveness_timeout = std::chrono::seconds(20);
    o.linger = std::chrono::milliseconds(1500);
    csp::run([&] {
        csp::net::node self(o);
        self.send(1, 1, std::uint64_t{0});
        const auto start = std::chrono::steady_clock::now();
        self.close();
        EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(6));
        EXPECT_TRUE(has_fault(self, "'closing-stalled-long': it did not finish closing within 1500 ms"))
            << testing::PrintToString(self.faults());
    });
    ::kill(pid, SIGKILL);
    resume.request_stop();
    resume.join();
    ::waitpid(pid, nullptr, 0);
}

// ... but a peer that stays stalled past the liveness timeout is lost.
TEST(net_faults, a_peer_stalled_past_the_liveness_timeout_is_lost) {
    csp::net::nameserver ns;
    net_test::captured_log log;
    const pid_t pid = spawn_receiver(ns, "stalled-long", 1);
    ::kill(pid, SIGSTOP);
    auto o = net_test::options_for(ns, "stalled-long", 0, 2);
    o.connect_timeout = std::chrono::milliseconds(300);
    o.liveness_timeout = std::chrono::milliseconds(1500);
    csp::run([&] {
        csp::net::node self(o);
        auto answer = self.open(2);
        self.send(1, 1, std::uint64_t{0});
        const auto start = std::chrono::steady_clock::now();
        net_test::expect_peer_error(answer, 1, "liveness timeout of 1500 ms");
        EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
        EXPECT_THROW(self.send(1, 1, std::uint64_t{1}), csp::net::peer_error);
    });
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
}

}  // namespace

namespace {

// Regression: a node that closed while its link to a peer had lost a
// crossing refused (and reset) the peer's winning connection, so its queued
// message waited for the 10 s linger and the peer heard of the departure
// only then. Now a closing node still takes the connection of a peer it has
// messages for.
TEST(net_faults, a_node_closing_during_a_crossing_still_delivers_and_leaves_promptly) {
    for (int round = 0; round < 20; ++round) {
        csp::net::nameserver ns;
        net_test::run_nodes(ns, "closing-crossing", 2, [&](csp::net::node& self) {
            auto inbox = self.open(1);
            const auto start = std::chrono::steady_clock::now();
            self.send(1 - self.rank(), 1, self.rank() + 10);  // both at once: a crossing
            if (self.rank() == 1) {
                self.close();  // at once, while the crossing is being settled
            } else {
                EXPECT_EQ(inbox.receive<int>(), 11);
                net_test::expect_peer_error(inbox, 1, "has left");
            }
            // Both are done promptly: the one that stays hears of the
            // departure, and the closing one's close() returns. (It used to
            // wait out connect_timeout when its connector was still looking
            // up the peer, which had left meanwhile: the nameserver now
            // answers such a lookup at once.)
            EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5))
                << "rank " << self.rank() << ", round " << round;
        });
    }
}


// Regression: a crossing's losing connection (the higher rank's) that
// reached the winner only after the winner had begun to close was refused
// with "node 0 is closing" and logged as a fault, though the winner's own
// connection carried the link and nothing was lost (seen as a fault line in
// csp-launch's ring). Under load the loser's node could also close while its
// connector was mid-handshake, which the winner logged as a connection
// closed after 0 of 32 bytes. Now the loser is told it lost the crossing, a
// refusal because this node closes is no fault of the peer's, and a
// connection that hangs up between handshake frames is closed quietly.
TEST(net_faults, a_crossings_losing_hello_reaching_a_closing_winner_is_no_fault) {
    for (int round = 0; round < 40; ++round) {
        csp::net::nameserver ns;
        net_test::captured_log log;
        net_test::run_nodes(ns, "late-loser", 2, [&](csp::net::node& self) {
            auto inbox = self.open(1);
            self.send(1 - self.rank(), 1, self.rank() + 10);  // both at once: a crossing
            EXPECT_EQ(inbox.receive<int>(), 11 - self.rank());
            if (self.rank() == 0) {
                self.close();
            } else {
                net_test::expect_peer_error(inbox, 0, "has left");
            }
            for (const auto& f : self.faults())
                ADD_FAILURE() << "rank " << self.rank() << ", round " << round << ": " << f;
        });
        for (const auto& line : log.lines()) ADD_FAILURE() << "round " << round << ": " << line;
    }
}

// Regression: a collective's revocation sent to a node that closed before a
// link to it was up was logged as a fault, "lost node 1 ...: its
// registration with the nameserver ended ... (1 queued messages to it were
// not sent)" (or "refused: node 1 is closing"), after a call that every rank
// had handled. Such messages are notices now (node::send_notice): one to a
// node that has gone sends nothing and throws nothing, and a link wanted for
// notices alone that never comes up fails without a logged line. Rank 0's
// first notice races rank 1's close; a plain send after it still throws.
TEST(net_faults, a_notice_to_a_node_that_has_gone_is_dropped_without_a_fault) {
    for (int round = 0; round < 20; ++round) {
        csp::net::nameserver ns;
        net_test::captured_log log;
        net_test::run_nodes(ns, "notice", 2, [&](csp::net::node& self) {
            auto inbox = self.open(1, csp::net::departures::each);
            if (self.rank() == 1) {
                self.close();
                return;
            }
            self.send_notice(1, 1, 42);
            net_test::expect_peer_error(inbox, 1, "node 1 of job 'notice'");
            EXPECT_NO_THROW(self.send_notice(1, 1, 43));
            EXPECT_THROW(self.send(1, 1, 44), csp::net::peer_error);
            self.close();
            for (const auto& f : self.faults()) ADD_FAILURE() << "round " << round << ": " << f;
        });
        for (const auto& line : log.lines()) ADD_FAILURE() << "round " << round << ": " << line;
    }
}

// Regression: a node whose connection reached a peer that was closing (the
// peer refused it: "node 1 is closing") logged "lost node 1 ...: ... refused:
// node 1 is closing (1 queued messages to it were not sent)" and failed every
// port with it, as if the peer had died. It had left cleanly: that is a
// departure, told as one ("has left"), and the fault line says only that the
// queued message was not sent. Rank 1 closes at once but lingers, because it
// has a message queued for rank 2, which never starts; rank 0's send reaches
// it meanwhile.
TEST(net_faults, a_connection_refused_by_a_closing_peer_is_its_departure) {
    csp::net::nameserver ns;
    net_test::run_ranks(
        ns, "refused-closing", 3, {0, 1},
        [&](csp::net::node& self) {
            auto inbox = self.open(1, csp::net::departures::each);
            if (self.rank() == 1) {
                self.send(2, 1, 7);
                self.close();
                return;
            }
            csp::sleep_for(std::chrono::milliseconds(300));
            self.send(1, 1, 42);
            net_test::expect_peer_error(inbox, 1, "node 1 of job 'refused-closing' has left (it was closing");
            EXPECT_THROW(self.send(1, 1, 43), csp::net::peer_error);
            const auto faults = self.faults();
            ASSERT_EQ(faults.size(), 1u) << (faults.empty() ? "" : faults[0]);
            EXPECT_EQ(faults[0],
                      "node 1 of job 'refused-closing' has left (it was closing when this node's connection reached "
                      "it): 1 queued message to it was not sent");
        },
        1, [](int, csp::net::node_options& o) { o.linger = std::chrono::milliseconds(1500); });
}

}  // namespace
