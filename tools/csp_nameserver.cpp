// csp-nameserver: the nameserver as a long-running daemon, for jobs started
// by a cluster launcher (srun, mpirun) that point CSP_NAMESERVER at it.
//
//   csp-nameserver [--bind HOST:PORT]      (default 127.0.0.1:7878)
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

#include "csp/runtime.hpp"
#include "net/nameserver.hpp"

namespace {

constexpr const char* usage_line = "usage: csp-nameserver [--bind HOST:PORT]   (default 127.0.0.1:7878)\n";

int usage(const std::string& why) {
    std::fprintf(stderr, "csp-nameserver: %s\n%s", why.c_str(), usage_line);
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    csp::net::endpoint bind{"127.0.0.1", 7878};
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "-h" || a == "--help") {
            std::printf("%s\nKeeps the names and addresses of the nodes of the jobs that point CSP_NAMESERVER at "
                        "it,\nuntil it is stopped (SIGINT, SIGTERM).\n",
                        usage_line);
            return 0;
        }
        if (a != "--bind") return usage("unknown option " + a);
        if (i + 1 >= argc) return usage("--bind needs HOST:PORT");
        try {
            bind = csp::net::endpoint::parse(argv[++i]);
        } catch (const std::exception& e) {
            return usage(std::string("--bind: ") + e.what());
        }
    }
    std::signal(SIGPIPE, SIG_IGN);
    try {
        csp::channel<bool> stop{"stop"};
        csp::run([&] {
            csp::net::nameserver::serve(
                bind, stop.reader(),
                [](csp::net::endpoint at) {
                    std::printf("csp-nameserver listening on %s\n", at.str().c_str());
                    std::fflush(stdout);
                },
                [](const std::string& report) { std::fprintf(stderr, "csp-nameserver: %s\n", report.c_str()); });
        });
    } catch (const std::exception& e) {
        std::fprintf(stderr, "csp-nameserver: %s\n", e.what());
        return 1;
    }
}
