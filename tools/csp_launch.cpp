// csp-launch: runs N nodes of a program on this machine, like mpiexec -n N.
//
//   csp-launch -n N [--job NAME] [--token SECRET] [--bind HOST] [--nameserver HOST:PORT]
//              [--transport auto|tcp|ucx] [--] program [args...]
//
// It starts a nameserver of its own (unless --nameserver names one), then N
// copies of the program with CSP_NAMESERVER, CSP_JOB, CSP_RANK, CSP_SIZE and
// CSP_TOKEN set (CSP_BIND too, with --bind; CSP_TRANSPORT with --transport:
// without it, nodes use UCX between them where the build has it, as
// CSP_TRANSPORT=auto says); csp::net::node reads them. The
// token is random unless given. If a node fails, the others are stopped
// (SIGTERM, then SIGKILL after 3 s) and csp-launch exits with the first
// failure's status (128 + signal for a signal).
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "net/nameserver.hpp"

extern char** environ;

namespace {

[[noreturn]] void usage(const std::string& why) {
    std::fprintf(stderr,
                 "csp-launch: %s\nusage: csp-launch -n N [--job NAME] [--token SECRET] [--bind HOST] "
                 "[--nameserver HOST:PORT] [--transport auto|tcp|ucx] [--] program [args...]\n",
                 why.c_str());
    std::exit(2);
}

std::string random_token() {
    unsigned char bytes[16] = {};
    const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::read(fd, bytes, sizeof bytes) != static_cast<ssize_t>(sizeof bytes)) {
        std::fprintf(stderr, "csp-launch: cannot read /dev/urandom for a token\n");
        std::exit(1);
    }
    ::close(fd);
    std::string hex;
    for (unsigned char b : bytes) {
        char two[3];
        std::snprintf(two, sizeof two, "%02x", b);
        hex += two;
    }
    return hex;
}

int status_code(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

}  // namespace

int main(int argc, char** argv) {
    int n = 0;
    std::string job = "launch-" + std::to_string(::getpid());
    std::string token, bind, transport;
    std::optional<csp::net::endpoint> external;
    int i = 1;
    for (; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage(a + " needs a value");
            return argv[++i];
        };
        if (a == "-n" || a == "-np") {
            try {
                n = std::stoi(value());
            } catch (const std::exception&) {
                usage("-n needs a number");
            }
        } else if (a == "--job") job = value();
        else if (a == "--token") token = value();
        else if (a == "--bind") bind = value();
        else if (a == "--transport") {
            transport = value();
            if (transport != "auto" && transport != "tcp" && transport != "ucx")
                usage("--transport " + transport + ": use auto, tcp or ucx");
        }
        else if (a == "--nameserver") {
            try {
                external = csp::net::endpoint::parse(value());
            } catch (const std::exception& e) {
                usage(e.what());
            }
        } else if (a == "--") {
            ++i;
            break;
        } else if (!a.empty() && a[0] == '-') usage("unknown option " + a);
        else break;
    }
    if (n < 1) usage("-n N: the number of nodes, at least 1");
    if (i >= argc) usage("no program to run");
    if (token.empty()) token = std::getenv("CSP_TOKEN") ? std::getenv("CSP_TOKEN") : random_token();

    std::unique_ptr<csp::net::nameserver> own;
    csp::net::endpoint ns_at;
    try {
        if (external) ns_at = *external;
        else {
            own = std::make_unique<csp::net::nameserver>(csp::net::endpoint{bind.empty() ? "127.0.0.1" : bind, 0});
            ns_at = own->address();
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "csp-launch: cannot start the nameserver: %s\n", e.what());
        return 1;
    }

    // Each child's environment is built here, not with setenv: the
    // nameserver's thread is already running and reads the environment
    // (getenv), and setenv under a concurrent getenv is a data race that can
    // crash (it did, under ASan). This process's own environment is never
    // changed.
    std::vector<std::string> common = {"CSP_NAMESERVER=" + ns_at.str(), "CSP_JOB=" + job,
                                       "CSP_SIZE=" + std::to_string(n), "CSP_TOKEN=" + token};
    if (!bind.empty()) common.push_back("CSP_BIND=" + bind);
    if (!transport.empty()) common.push_back("CSP_TRANSPORT=" + transport);
    auto overridden = [&](const char* entry) {
        const std::string_view e(entry);
        if (e.starts_with("CSP_RANK=")) return true;
        for (const auto& c : common)
            if (e.substr(0, e.find('=') + 1) == std::string_view(c).substr(0, c.find('=') + 1)) return true;
        return false;
    };
    std::vector<std::string> inherited;
    for (char** e = environ; *e != nullptr; ++e)
        if (!overridden(*e)) inherited.emplace_back(*e);

    std::map<pid_t, int> ranks;  // running children
    for (int r = 0; r < n; ++r) {
        std::vector<std::string> env = inherited;
        env.insert(env.end(), common.begin(), common.end());
        env.push_back("CSP_RANK=" + std::to_string(r));
        std::vector<char*> envp;
        for (auto& v : env) envp.push_back(v.data());
        envp.push_back(nullptr);
        pid_t pid;
        if (const int e = ::posix_spawnp(&pid, argv[i], nullptr, nullptr, argv + i, envp.data()); e != 0) {
            std::fprintf(stderr, "csp-launch: cannot start %s: %s\n", argv[i], std::strerror(e));
            for (auto& [p, _] : ranks) ::kill(p, SIGTERM);
            for (auto& [p, _] : ranks) ::waitpid(p, nullptr, 0);
            return 127;
        }
        ranks[pid] = r;
    }

    int result = 0;
    std::optional<std::chrono::steady_clock::time_point> kill_at;
    while (!ranks.empty()) {
        int status;
        const pid_t pid = ::waitpid(-1, &status, kill_at ? WNOHANG : 0);
        if (pid == 0) {
            if (std::chrono::steady_clock::now() >= *kill_at)
                for (auto& [p, _] : ranks) ::kill(p, SIGKILL);
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
            continue;
        }
        if (pid < 0) break;
        auto it = ranks.find(pid);
        if (it == ranks.end()) continue;
        const int rank = it->second;
        ranks.erase(it);
        const int code = status_code(status);
        if (code != 0 && result == 0) {
            result = code;
            std::fprintf(stderr, "csp-launch: rank %d of job %s %s %d; stopping the others\n", rank, job.c_str(),
                         WIFEXITED(status) ? "exited with status" : "was killed by signal",
                         WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
            for (auto& [p, _] : ranks) ::kill(p, SIGTERM);
            kill_at = std::chrono::steady_clock::now() + std::chrono::seconds(3);
        }
    }
    return result;
}
