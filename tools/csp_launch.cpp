// csp-launch: runs N nodes of a program on this machine, like mpiexec -n N.
//
//   csp-launch -n N [--job NAME] [--token SECRET] [--bind HOST] [--nameserver HOST:PORT]
//              [--transport auto|tcp|ucx] [--bind-to cpu|none] [--timeout SECONDS] [--no-prefix]
//              [--trace FILE] [--] program [args...]
//
// It starts a nameserver of its own (unless --nameserver names one), then N
// copies of the program with CSP_NAMESERVER, CSP_JOB, CSP_RANK, CSP_SIZE,
// CSP_LOCAL_SIZE (N: every rank runs here), CSP_LOCAL_CPUS (how many CPUs
// this launcher may use) and CSP_TOKEN set (CSP_BIND too, with --bind; CSP_TRANSPORT with --transport:
// without it, nodes use UCX between them where the build has it, as
// CSP_TRANSPORT=auto says); csp::net::node reads them. The
// token is random unless given. If a node fails, the others are stopped
// (SIGTERM, then SIGKILL after 3 s) and csp-launch exits with the first
// failure's status (128 + signal for a signal).
//
// No node outlives the launcher: SIGINT to it is passed to every node, and
// SIGTERM, SIGHUP and SIGPIPE (the reader of its output went away) reach
// them as SIGTERM (SIGKILL 3 s later, or at a second signal); it exits
// 128 + the signal once they are gone; if it cannot start every node it
// stops those it started. Killed by SIGKILL it can do nothing, so each node
// holds the read end of a pipe only the launcher writes to
// (CSP_LAUNCHER_FD) and ends itself when that pipe ends.
//
// Each line a node prints goes out prefixed with its rank ("[2] ..."), on
// the stream it was printed to, unless --no-prefix.
//
// A job-wide deadlock found by the launcher's nameserver (every process of
// every node blocked, nothing in flight: net/deadlock_waves.hpp) is printed
// here; the nodes' blocked processes fail with it, and csp-launch exits
// non-zero (the first failure's status, or 3 if every node caught it). With
// --timeout, a job still running after SECONDS is asked what each node's
// processes are doing (blocked on what, ready, or computing), that is
// printed, and the job is stopped (exit 124). A deadlock is reported
// before that, within a second of it forming.
//
// --bind-to cpu: rank r is pinned to one logical CPU, the r-th (round robin)
// of tools/cpu_binding.hpp's order: one per core before any core's second
// hardware thread. A node's runtime threads then share that CPU. Without it
// (--bind-to none, the default) the kernel places and moves the ranks.
//
// --trace FILE: each node records a timeline (CSP_TRACE=FILE.rank<r>,
// net/node_options.hpp), and once the job ends they are merged into FILE,
// one Perfetto trace with the program's and the library's tracks of every
// node and an arrow for each message between nodes (timeline_merge.hpp).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "csp/model/timeline_merge.hpp"
#include "net/nameserver.hpp"
#include "tools/cpu_binding.hpp"

extern char** environ;

namespace {

constexpr const char* usage_line =
    "usage: csp-launch -n N [--job NAME] [--token SECRET] [--bind HOST] [--nameserver HOST:PORT] "
    "[--transport auto|tcp|ucx] [--bind-to cpu|none] [--oversubscribe] [--timeout SECONDS] [--no-prefix] "
    "[--trace FILE] [--] program [args...]\n";

// More nodes than this per CPU need --oversubscribe.
constexpr std::size_t max_nodes_per_cpu = 16;

[[noreturn]] void usage(const std::string& why) {
    std::fprintf(stderr, "csp-launch: %s\n%s", why.c_str(), usage_line);
    std::exit(2);
}

[[noreturn]] void help() {
    std::printf("%s\n"
                "Runs N nodes of a program on this machine, like mpiexec -n N.\n\n"
                "  -n, -np N                 how many nodes (at least 1)\n"
                "  --job NAME                the job's name (default launch-<pid>)\n"
                "  --token SECRET            the secret the nodes prove to each other (default $CSP_TOKEN,\n"
                "                            else a random one)\n"
                "  --bind HOST               the address the nameserver and the nodes listen on (default 127.0.0.1)\n"
                "  --nameserver HOST:PORT    use that nameserver instead of starting one\n"
                "  --transport auto|tcp|ucx  the nodes' links (default auto: UCX where both ends have it)\n"
                "  --bind-to cpu|none        pin rank r to one CPU, round robin (default none)\n"
                "  --oversubscribe           start more than 16 nodes per CPU this launcher may use\n"
                "                            (without it, such an N is taken for a typo and refused)\n"
                "  --timeout SECONDS         stop a job still running after SECONDS and say what each of its\n"
                "                            processes was doing (exit status 124)\n"
                "  --no-prefix               do not prefix each line a node prints with \"[rank] \"\n"
                "  --trace FILE              record each node's timeline and merge them into FILE (Perfetto)\n"
                "  -h, --help                this text\n\n"
                "A node that fails stops the others; the exit status is the first failure's. SIGINT is passed\n"
                "to every node; SIGTERM, SIGHUP and the end of the reader of this launcher's output (SIGPIPE)\n"
                "reach them as SIGTERM. A node still running 3 s later, or at a second signal, is killed.\n",
                usage_line);
    std::exit(0);
}

// The whole of `text` as a number, or nothing ("4x" is not 4).
std::optional<long> whole_number(std::string_view text) {
    long v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    return v;
}

// The last signal that asked this launcher to stop, and how many came: set
// by the handler (any thread), taken by the main loop, which passes it on
// to the nodes. A node left running by a launcher that died would hold its
// CPU and ports with no one to stop it.
std::atomic<int> stop_signal{0};
std::atomic<int> stop_signals{0};
static_assert(std::atomic<int>::is_always_lock_free, "touched by a signal handler");

extern "C" void on_stop_signal(int s) {
    stop_signal.store(s);
    // Every line the output relay cannot write raises SIGPIPE again: those
    // are not a user asking twice.
    if (s != SIGPIPE) stop_signals.fetch_add(1);
}

// A signal this launcher was started with ignored stays ignored (nohup's
// SIGHUP, a non-interactive shell's SIGINT for `&`), for it and its nodes.
void catch_stop_signals() {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
        struct sigaction was {};
        if (::sigaction(s, nullptr, &was) == 0 && was.sa_handler == SIG_IGN) continue;
        ::sigaction(s, &sa, nullptr);
    }
}

// Ends the ranks started so far when the job cannot go on: SIGTERM, then
// SIGKILL to any still running 3 s later; returns once all are reaped.
void stop_started(std::map<pid_t, int>& ranks) {
    for (auto& [p, _] : ranks) ::kill(p, SIGTERM);
    const auto kill_at = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    bool killed = false;
    while (!ranks.empty()) {
        int status;
        const pid_t pid = ::waitpid(-1, &status, WNOHANG);
        if (pid > 0) {
            ranks.erase(pid);
            continue;
        }
        if (pid < 0 && errno != EINTR) break;
        if (!killed && std::chrono::steady_clock::now() >= kill_at) {
            for (auto& [p, _] : ranks) ::kill(p, SIGKILL);
            killed = true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
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

// Copies the nodes' output to ours, a whole line at a time, each prefixed
// with its node's rank, so lines of different nodes never mix. Runs on a
// thread of its own until every node's pipes are closed, or stop().
class output_relay {
public:
    struct source {
        int fd;    // read end of the node's pipe
        int rank;
        int to;    // 1 or 2
        std::string partial;
    };

    output_relay() = default;
    output_relay(const output_relay&) = delete;
    output_relay& operator=(const output_relay&) = delete;
    ~output_relay() {
        abandon();
        for (int& fd : wake_)
            if (fd >= 0) ::close(std::exchange(fd, -1));
    }

    void add(int fd, int rank, int to) { sources_.push_back({fd, rank, to, {}}); }

    // Closes the pipes of a relay that never started (the job did not), so
    // the descriptors are free again while the nodes started are stopped.
    void abandon() {
        if (thread_.joinable()) return;
        for (auto& s : sources_)
            if (s.fd >= 0) ::close(std::exchange(s.fd, -1));
    }

    // The pipe that ends the relay is made before any node starts: made
    // later, with the descriptor table full, finish() could not wake the
    // relay, and a node's descendant that kept its output open would keep
    // the launcher waiting for ever.
    bool prepare() { return ::pipe2(wake_, O_CLOEXEC) == 0; }
    void start() { thread_ = std::thread([this] { run(); }); }
    // Lets the relay drain what is buffered for up to `grace`, then ends it.
    void finish(std::chrono::milliseconds grace) {
        if (!thread_.joinable()) return;
        {
            std::unique_lock lk(m_);
            done_cv_.wait_for(lk, grace, [&] { return done_; });
        }
        if (wake_[1] >= 0) (void)!::write(wake_[1], "x", 1);
        thread_.join();
        for (int& fd : wake_)
            if (fd >= 0) ::close(std::exchange(fd, -1));
    }

private:
    static void emit(const source& s, std::string_view line) {
        // Built by appends: GCC 12 misreads "[" + to_string(...) (-Wrestrict).
        std::string out;
        out.reserve(line.size() + 16);
        out += '[';
        out += std::to_string(s.rank);
        out += "] ";
        out.append(line);
        out += '\n';
        std::size_t at = 0;
        while (at < out.size()) {
            const ssize_t n = ::write(s.to, out.data() + at, out.size() - at);
            if (n <= 0) {
                if (n < 0 && errno == EINTR) continue;
                return;
            }
            at += static_cast<std::size_t>(n);
        }
    }

    void run() {
        std::vector<pollfd> fds;
        for (;;) {
            fds.clear();
            for (const auto& s : sources_)
                if (s.fd >= 0) fds.push_back({s.fd, POLLIN, 0});
            if (fds.empty()) break;
            if (wake_[0] >= 0) fds.push_back({wake_[0], POLLIN, 0});
            if (::poll(fds.data(), fds.size(), -1) < 0) {
                if (errno == EINTR) continue;
                break;
            }
            if (wake_[0] >= 0 && fds.back().revents) break;
            for (auto& s : sources_) {
                if (s.fd < 0) continue;
                auto it = std::find_if(fds.begin(), fds.end(), [&](const pollfd& p) { return p.fd == s.fd; });
                if (it == fds.end() || it->revents == 0) continue;
                char buf[65536];
                const ssize_t n = ::read(s.fd, buf, sizeof buf);
                if (n < 0 && errno == EINTR) continue;
                if (n <= 0) {
                    if (!s.partial.empty()) emit(s, s.partial);
                    ::close(s.fd);
                    s.fd = -1;
                    continue;
                }
                s.partial.append(buf, static_cast<std::size_t>(n));
                std::size_t from = 0;
                for (auto nl = s.partial.find('\n'); nl != std::string::npos; nl = s.partial.find('\n', from)) {
                    emit(s, std::string_view(s.partial).substr(from, nl - from));
                    from = nl + 1;
                }
                s.partial.erase(0, from);
            }
        }
        for (auto& s : sources_)
            if (s.fd >= 0) {
                if (!s.partial.empty()) emit(s, s.partial);
                ::close(s.fd);
                s.fd = -1;
            }
        std::lock_guard lk(m_);
        done_ = true;
        done_cv_.notify_all();
    }

    std::vector<source> sources_;
    int wake_[2] = {-1, -1};
    std::thread thread_;
    std::mutex m_;
    std::condition_variable done_cv_;
    bool done_ = false;
};

// A job that could not start every node: its pipes are closed before its
// nodes are stopped. When a pipe could not be made, the descriptor table is
// full; the nameserver's thread, still serving meanwhile, must have room.
void stop_job(output_relay& relay, std::map<pid_t, int>& ranks) {
    relay.abandon();
    stop_started(ranks);
}

// The nodes' timelines into one; a node that wrote none (it was killed, or
// made no node) is named and left out.
void merge_traces(const std::string& file, int n) {
    std::vector<std::string> parts;
    for (int r = 0; r < n; ++r) {
        const std::string part = file + ".rank" + std::to_string(r);
        if (::access(part.c_str(), R_OK) == 0) parts.push_back(part);
        else std::fprintf(stderr, "csp-launch: rank %d wrote no timeline (%s)\n", r, part.c_str());
    }
    if (parts.empty()) return;
    try {
        std::ofstream out(file);
        const auto m = csp::model::merge_timelines(parts, out);
        out.flush();
        if (!out) throw std::runtime_error("cannot write " + file);
        std::fprintf(stderr, "csp-launch: timeline of %zu nodes, %zu messages between them, in %s\n", m.nodes,
                     m.messages, file.c_str());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "csp-launch: timeline: %s\n", e.what());
    }
}

}  // namespace

int main(int argc, char** argv) {
    int n = 0;
    std::string job = "launch-" + std::to_string(::getpid());
    std::string token, bind, transport, trace;
    bool prefix = true;
    bool bind_cpus = false;
    bool oversubscribe = false;
    std::optional<std::chrono::seconds> timeout;
    std::optional<csp::net::endpoint> external;
    int i = 1;
    for (; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage(a + " needs a value");
            return argv[++i];
        };
        if (a == "-h" || a == "--help") help();
        else if (a == "-n" || a == "-np") {
            const std::string v = value();
            const auto count = whole_number(v);
            if (!count) usage(a + " needs a number, not '" + v + "'");
            if (*count < 1 || *count > 1'000'000)
                usage(a + " N: the number of nodes, from 1 to 1000000 (not " + v + ")");
            n = static_cast<int>(*count);
        } else if (a == "--job") {
            job = value();
            if (job.empty()) usage("--job needs a name");
        } else if (a == "--token") {
            token = value();
            if (token.empty()) usage("--token needs a secret (without it, $CSP_TOKEN or a random one)");
        }
        else if (a == "--bind") bind = value();
        else if (a == "--no-prefix") prefix = false;
        else if (a == "--oversubscribe") oversubscribe = true;
        else if (a == "--trace") {
            trace = value();
            // Found out now, not after the job: each node writes FILE.rank<r>
            // beside it, and the merge writes FILE.
            const auto slash = trace.rfind('/');
            const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : trace.substr(0, slash);
            if (trace.empty() || trace.back() == '/') usage("--trace needs a file name");
            if (::access(dir.c_str(), W_OK) != 0)
                usage("--trace " + trace + ": cannot write in " + dir + ": " + std::strerror(errno));
        }
        else if (a == "--timeout") {
            const std::string v = value();
            const auto t = whole_number(v);
            if (!t || *t < 1) usage("--timeout needs a whole number of seconds, at least 1 (not '" + v + "')");
            timeout = std::chrono::seconds(*t);
        }
        else if (a == "--transport") {
            transport = value();
            if (transport != "auto" && transport != "tcp" && transport != "ucx")
                usage("--transport " + transport + ": use auto, tcp or ucx");
        }
        else if (a == "--bind-to") {
            const std::string to = value();
            if (to != "cpu" && to != "none") usage("--bind-to " + to + ": use cpu or none");
            bind_cpus = to == "cpu";
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
    // From here on a signal stops the job instead of this launcher alone.
    catch_stop_signals();
    if (i >= argc) usage("no program to run");
    if (token.empty()) token = std::getenv("CSP_TOKEN") ? std::getenv("CSP_TOKEN") : random_token();

    // The CPUs this launcher may use; with --bind-to cpu rank r runs on
    // cpus[r % size].
    std::vector<int> cpus;
    try {
        cpus = csp::launch::binding_order();
    } catch (const std::exception& e) {
        if (bind_cpus) {
            std::fprintf(stderr, "csp-launch: --bind-to cpu: %s\n", e.what());
            return 1;
        }
    }
    // As mpiexec refuses more ranks than slots: nodes past 16 per CPU would
    // take the machine down before they got anywhere (-n 100000 for -n 10?).
    if (!oversubscribe && !cpus.empty() && static_cast<std::size_t>(n) > max_nodes_per_cpu * cpus.size())
        usage("-n " + std::to_string(n) + " would start " + std::to_string(n) + " processes on the " +
              std::to_string(cpus.size()) + (cpus.size() == 1 ? " CPU" : " CPUs") +
              " this launcher may use, more than " + std::to_string(max_nodes_per_cpu) +
              " per CPU; pass --oversubscribe to start them anyway");

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
    // Every rank runs on this host: CSP_LOCAL_SIZE is the job's size.
    std::vector<std::string> common = {"CSP_NAMESERVER=" + ns_at.str(), "CSP_JOB=" + job,
                                       "CSP_SIZE=" + std::to_string(n), "CSP_LOCAL_SIZE=" + std::to_string(n),
                                       "CSP_TOKEN=" + token};
    // The CPUs the ranks share: this launcher's (node_options::local_cpus;
    // a rank bound to one CPU cannot tell them from its own mask).
    if (!cpus.empty()) common.push_back("CSP_LOCAL_CPUS=" + std::to_string(cpus.size()));
    if (!bind.empty()) common.push_back("CSP_BIND=" + bind);
    if (!transport.empty()) common.push_back("CSP_TRANSPORT=" + transport);
    // The lifeline: a pipe no one writes to, its read end in every node
    // (CSP_LAUNCHER_FD, with its inode as proof), its write end only here
    // (close-on-exec). It ends when this process does; a node that sees the
    // end sends itself SIGTERM (node_options::launcher_fd): a launcher
    // killed by SIGKILL, which it cannot pass on, leaves no node behind.
    int lifeline[2] = {-1, -1};
    struct stat lifeline_st {};
    if (::pipe(lifeline) == 0 && ::fcntl(lifeline[1], F_SETFD, FD_CLOEXEC) == 0 &&
        ::fstat(lifeline[0], &lifeline_st) == 0)
        common.push_back("CSP_LAUNCHER_FD=" + std::to_string(lifeline[0]) + ":" +
                         std::to_string(static_cast<unsigned long long>(lifeline_st.st_ino)));

    auto overridden = [&](const char* entry) {
        const std::string_view e(entry);
        if (e.starts_with("CSP_RANK=") || (!trace.empty() && e.starts_with("CSP_TRACE="))) return true;
        for (const auto& c : common)
            if (e.substr(0, e.find('=') + 1) == std::string_view(c).substr(0, c.find('=') + 1)) return true;
        return false;
    };
    std::vector<std::string> inherited;
    for (char** e = environ; *e != nullptr; ++e)
        if (!overridden(*e)) inherited.emplace_back(*e);

    std::map<pid_t, int> ranks;  // running children
    output_relay relay;
    if (prefix && !relay.prepare()) {
        std::fprintf(stderr, "csp-launch: cannot make a pipe for the nodes' output: %s\n", std::strerror(errno));
        return 1;
    }
    for (int r = 0; r < n && stop_signal.load() == 0; ++r) {
        std::vector<std::string> env = inherited;
        env.insert(env.end(), common.begin(), common.end());
        env.push_back("CSP_RANK=" + std::to_string(r));
        if (!trace.empty()) env.push_back("CSP_TRACE=" + trace + ".rank" + std::to_string(r));
        std::vector<char*> envp;
        for (auto& v : env) envp.push_back(v.data());
        envp.push_back(nullptr);
        // The node's stdout and stderr, through pipes to the relay.
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        int pipes[2][2] = {{-1, -1}, {-1, -1}};
        if (prefix) {
            for (int k = 0; k < 2; ++k) {
                if (::pipe2(pipes[k], O_CLOEXEC) != 0) {
                    const int error = errno;
                    posix_spawn_file_actions_destroy(&actions);
                    for (int j = 0; j < k; ++j)
                        for (int fd : pipes[j]) ::close(fd);
                    std::fprintf(stderr, "csp-launch: cannot make a pipe for rank %d: %s; stopping the %zu started\n",
                                 r, std::strerror(error), ranks.size());
                    stop_job(relay, ranks);
                    return 1;
                }
                posix_spawn_file_actions_adddup2(&actions, pipes[k][1], k + 1);
            }
        }
        pid_t pid;
        int e;
        try {
            // The child inherits this thread's mask; the launcher's threads
            // (the nameserver's, the relay's) keep theirs.
            std::optional<csp::launch::bound_thread> bound;
            if (bind_cpus) bound.emplace(cpus[static_cast<std::size_t>(r) % cpus.size()]);
            e = ::posix_spawnp(&pid, argv[i], &actions, nullptr, argv + i, envp.data());
        } catch (const std::exception& x) {
            std::fprintf(stderr, "csp-launch: rank %d: %s\n", r, x.what());
            e = EINVAL;
        }
        posix_spawn_file_actions_destroy(&actions);
        if (prefix)
            for (int k = 0; k < 2; ++k) {
                ::close(pipes[k][1]);
                if (e == 0) relay.add(pipes[k][0], r, k + 1);
                else ::close(pipes[k][0]);
            }
        if (e != 0) {
            std::fprintf(stderr, "csp-launch: cannot start %s: %s\n", argv[i], std::strerror(e));
            stop_job(relay, ranks);
            return 127;
        }
        ranks[pid] = r;
    }

    if (prefix) relay.start();

    using steady = std::chrono::steady_clock;
    const auto started = steady::now();
    int result = 0;
    bool deadlocked = false;
    std::optional<steady::time_point> term_at, kill_at;
    auto stop_others = [&](steady::duration after) {
        if (!term_at) term_at = steady::now() + after;
    };
    // The nameserver records a report before it tells the nodes, so one is
    // seen here before any node could exit because of it.
    auto look_for_deadlock = [&] {
        if (!own || deadlocked) return;
        if (const auto found = own->deadlocks(); !found.empty()) {
            deadlocked = true;
            std::fprintf(stderr, "csp-launch: %s\n", found.front().c_str());
            stop_others(std::chrono::seconds(5));  // time to fail and unwind on their own
        }
    };
    int signalled = 0, asked = 0;
    while (!ranks.empty()) {
        if (const int s = stop_signal.exchange(0); s != 0 && signalled == 0) {
            signalled = s;
            asked = stop_signals.load();
            if (result == 0) result = 128 + s;
            std::fprintf(stderr, "csp-launch: %s; stopping job %s (%zu nodes)\n", ::strsignal(s), job.c_str(),
                         ranks.size());
            // SIGINT goes on as it is. A node may ignore SIGPIPE (its
            // sockets do), and one that loads UCX has UCX's debug handler
            // on SIGHUP (UCX_DEBUG_SIGNO), which does not end it: both get
            // SIGTERM, as mpirun's nodes do for a hangup.
            for (auto& [p, _] : ranks) ::kill(p, s == SIGINT ? SIGINT : SIGTERM);
            term_at = steady::now();
            kill_at = *term_at + std::chrono::seconds(3);
        } else if (signalled != 0 && stop_signals.load() > asked) {
            kill_at = steady::now();  // asked again: at once
        }
        look_for_deadlock();
        int status;
        const pid_t pid = ::waitpid(-1, &status, WNOHANG);
        if (pid == 0) {
            const auto now = steady::now();
            if (timeout && !term_at && now - started >= *timeout) {
                if (result == 0) result = 124;
                std::string what;
                if (own)
                    for (const auto& line : own->status(job, std::chrono::seconds(3))) what += "\n  " + line;
                std::fprintf(stderr, "csp-launch: job %s still running after %lld s; stopping it%s%s\n", job.c_str(),
                             static_cast<long long>(timeout->count()), what.empty() ? "" : ". Its processes:",
                             what.c_str());
                stop_others(std::chrono::seconds(0));
            }
            if (term_at && !kill_at && now >= *term_at) {
                for (auto& [p, _] : ranks) ::kill(p, SIGTERM);
                kill_at = now + std::chrono::seconds(3);
            }
            if (kill_at && now >= *kill_at)
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
            if (!deadlocked) {  // after a deadlock every node fails: no news
                std::fprintf(stderr, "csp-launch: rank %d of job %s %s %d; stopping the others\n", rank, job.c_str(),
                             WIFEXITED(status) ? "exited with status" : "was killed by signal",
                             WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
                stop_others(std::chrono::seconds(0));
            }
        }
    }
    relay.finish(std::chrono::seconds(2));
    if (deadlocked && result == 0) result = 3;
    if (!trace.empty()) merge_traces(trace, n);
    return result;
}
