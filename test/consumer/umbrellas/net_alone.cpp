// Only net/net.hpp: a node alone (a job of one) sends itself a value.
#include "net/net.hpp"

int net_alone() {
    return csp::run([] {
        csp::net::node self;
        csp::net::port inbox = self.open(1);
        self.send(self.rank(), 1, 42);
        const int got = inbox.receive<int>();
        self.close();
        return got;
    });
}
