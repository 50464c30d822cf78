// The tools' arguments: -h/--help on every tool, and wrong arguments named
// with a usage line and status 2 (never a crash).
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include <gtest/gtest.h>

namespace {

struct result {
    int status;  // the exit status, -1 if killed by a signal
    std::string out, err;
};

// Runs a shell command; stdout and stderr apart.
result run(const std::string& command) {
    char err_name[] = "/tmp/csp-tools-test-XXXXXX";
    const int fd = ::mkstemp(err_name);
    EXPECT_GE(fd, 0);
    result r{};
    FILE* p = ::popen((command + " 2>" + err_name).c_str(), "r");
    char buf[512];
    while (std::fgets(buf, sizeof buf, p)) r.out += buf;
    const int status = ::pclose(p);
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) r.err.append(buf, static_cast<std::size_t>(n));
    ::close(fd);
    ::unlink(err_name);
    return r;
}

struct tool {
    const char* name;
    const char* path;
};
const tool tools[] = {
    {"csp-launch", CSP_LAUNCH},
    {"csp-model", CSP_MODEL},
    {"csp-nameserver", CSP_NAMESERVER},
    {"csp-trace-merge", CSP_TRACE_MERGE},
};

// Regression: every tool took --help for a wrong argument (status 2, usage
// on stderr).
TEST(tools, help_goes_to_stdout_with_status_zero) {
    for (const auto& t : tools)
        for (const char* flag : {"--help", "-h"}) {
            const result r = run(std::string(t.path) + " " + flag);
            EXPECT_EQ(r.status, 0) << t.name << " " << flag << ": " << r.err;
            EXPECT_EQ(r.out.rfind(std::string("usage: ") + t.name, 0), 0u) << t.name << " " << flag << ": " << r.out;
            EXPECT_GT(r.out.size(), 80u) << t.name << " says too little: " << r.out;
            EXPECT_EQ(r.err, "") << t.name << " " << flag;
        }
}

// Regression: csp-nameserver --bind with an address it could not read died
// (std::terminate, SIGABRT) instead of saying so.
TEST(tools, a_nameserver_address_it_cannot_read_is_named) {
    const std::pair<const char*, const char*> refused[] = {
        {"--bind garbage", "csp-nameserver: --bind: 'garbage' is not an address of the form host:port"},
        {"--bind 127.0.0.1:99999", "csp-nameserver: --bind: '127.0.0.1:99999': the port must be a number"},
        {"--bind", "csp-nameserver: --bind needs HOST:PORT"},
        {"--port 7", "csp-nameserver: unknown option --port"},
    };
    for (const auto& [arguments, why] : refused) {
        const result r = run(std::string(CSP_NAMESERVER) + " " + arguments);
        EXPECT_EQ(r.status, 2) << arguments << ": " << r.err;
        EXPECT_EQ(r.err.rfind(why, 0), 0u) << arguments << ": " << r.err;
        EXPECT_NE(r.err.find("usage: csp-nameserver"), std::string::npos) << arguments << ": " << r.err;
    }
}

TEST(tools, trace_merge_names_what_is_missing_or_unknown) {
    result r = run(std::string(CSP_TRACE_MERGE) + " out.json");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("an output file and at least one timeline are needed"), std::string::npos) << r.err;
    // An option-like word is not taken for the output file (it would be
    // written over).
    r = run(std::string(CSP_TRACE_MERGE) + " --out merged.json a.json");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("unknown option --out"), std::string::npos) << r.err;
}

}  // namespace
