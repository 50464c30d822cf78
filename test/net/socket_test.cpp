// The socket helpers' ends: a hang-up before the first byte of a read or a
// write is closed_before_data (nothing was cut), anything later a net_error.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "csp/runtime.hpp"
#include "net/socket.hpp"

namespace {

using namespace std::chrono_literals;
namespace detail = csp::net;  // the socket helpers

// A connected pair over loopback: the accepted end and the connecting end.
std::pair<detail::unique_fd, detail::unique_fd> connected_pair() {
    csp::net::endpoint bound;
    detail::unique_fd listener = detail::listen_on(csp::net::endpoint{"127.0.0.1", 0}, bound);
    detail::unique_fd client = detail::connect_to(bound, csp::clock::now() + 5s);
    detail::unique_fd accepted;
    for (int i = 0; i < 500 && !accepted; ++i) {
        accepted = detail::accept_from(listener.get());
        if (!accepted) std::this_thread::sleep_for(2ms);
    }
    return {std::move(accepted), std::move(client)};
}

// Closes fd with a reset (SO_LINGER 0) rather than an end of file.
void reset(detail::unique_fd& fd) {
    const linger hard{1, 0};
    ::setsockopt(fd.get(), SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
    fd = detail::unique_fd();
}

}  // namespace

// Regression: a node writing its handshake challenge to a connector that had
// just been reset (its node was closing or failing) logged "refused
// connection from A: connection from A: Broken pipe" as a fault, where the
// same hang-up seen by a read is none.
TEST(net_socket, a_write_to_a_peer_that_hung_up_is_closed_before_data) {
    csp::run([] {
        auto [server, client] = connected_pair();
        ASSERT_TRUE(server);
        reset(client);
        std::this_thread::sleep_for(20ms);  // the reset reaches the server's socket
        const std::string bytes(64, 'x');
        try {
            detail::write_all(server.get(), bytes.data(), bytes.size(), csp::clock::now() + 5s, "connection from A");
            ADD_FAILURE() << "a write to a reset connection succeeded";
        } catch (const detail::closed_before_data& e) {
            EXPECT_NE(std::string(e.what()).find("connection from A: the peer hung up ("), std::string::npos)
                << e.what();
            EXPECT_NE(std::string(e.what()).find("before any of 64 bytes were written"), std::string::npos) << e.what();
        }
    });
}

TEST(net_socket, a_read_that_meets_the_end_before_its_first_byte_is_closed_before_data_one_after_is_not) {
    csp::run([] {
        auto [server, client] = connected_pair();
        ASSERT_TRUE(server);
        char buf[8];
        ASSERT_EQ(::write(client.get(), "abc", 3), 3);
        client = detail::unique_fd();
        try {
            detail::read_exact(server.get(), buf, sizeof buf, csp::clock::now() + 5s, "c");
            ADD_FAILURE() << "a cut read succeeded";
        } catch (const detail::closed_before_data& e) {
            ADD_FAILURE() << "3 of 8 bytes came, so the read was cut: " << e.what();
        } catch (const csp::net::net_error& e) {
            EXPECT_NE(std::string(e.what()).find("closed after 3 of 8 expected bytes"), std::string::npos) << e.what();
        }
        try {
            detail::read_exact(server.get(), buf, sizeof buf, csp::clock::now() + 5s, "c");
            ADD_FAILURE() << "a read at the end succeeded";
        } catch (const detail::closed_before_data&) {
        }
    });
}
