#pragma once
// What the tests of csp-launch share: running a command or a bash script
// and reading its output, a scratch folder where each rank writes its
// process id, and which of those processes still run.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace launcher_fixture {

// Runs a shell command; returns its exit status and output (stdout and stderr).
inline int run(const std::string& command, std::string& output) {
    FILE* p = ::popen((command + " 2>&1").c_str(), "r");
    char buf[512];
    while (std::fgets(buf, sizeof buf, p)) output += buf;
    const int status = ::pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A scratch folder where each rank of a job writes its process id
// (pid.<rank>), to see afterwards which of them still run.
class scratch {
public:
    scratch() {
        char name[] = "/tmp/csp-launch-test-XXXXXX";
        EXPECT_NE(::mkdtemp(name), nullptr);
        path_ = name;
    }
    ~scratch() { std::filesystem::remove_all(path_); }
    const std::string& path() const { return path_; }
    // A rank's command: runs `first` (shell words), writes its pid (the
    // shell's, which then becomes `program` by exec), then runs program.
    std::string rank(const std::string& program, const std::string& first = "") const {
        return "sh -c '" + first + "echo $$ > " + path_ + "/pid.$CSP_RANK; exec " + program + "'";
    }
    std::vector<pid_t> pids() const {
        std::vector<pid_t> out;
        for (const auto& e : std::filesystem::directory_iterator(path_))
            if (e.path().filename().string().starts_with("pid.")) {
                std::ifstream in(e.path());
                pid_t p = 0;
                if (in >> p) out.push_back(p);
            }
        return out;
    }

private:
    std::string path_;
};

// Of `pids`, those that are still running (a zombie is not: a node whose
// launcher died is reaped by whoever adopts it, if anyone).
inline std::vector<pid_t> alive(const std::vector<pid_t>& pids) {
    std::vector<pid_t> out;
    for (pid_t p : pids) {
        std::ifstream stat("/proc/" + std::to_string(p) + "/stat");
        std::string line;
        if (!std::getline(stat, line)) continue;  // gone
        const auto close = line.rfind(')');       // "pid (comm) state ..."
        if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z') continue;
        out.push_back(p);
    }
    return out;
}

// Runs `script` with bash (for $!, wait and PIPESTATUS); returns its
// status and output.
inline int run_bash(const scratch& dir, const std::string& script, std::string& output) {
    const std::string file = dir.path() + "/script.sh";
    std::ofstream(file) << script;
    return run("bash " + file, output);
}


}  // namespace launcher_fixture
