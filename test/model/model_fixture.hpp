#pragma once
// Small networks the model tests record, and running SPIN on a Promela file.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

#include "csp/csp.hpp"
#include "csp/model/cspm.hpp"
#include "csp/model/dot.hpp"
#include "csp/model/promela.hpp"
#include "csp/model/recorder.hpp"

namespace model_test {

// Commstime for `loops` values: prefix, delta, succ and a consumer that
// poisons the ring when done.
inline csp::model::network commstime(int loops) {
    csp::model::recorder rec;
    try {
        csp::run([loops] {
            csp::channel<long> a{"a"}, b{"b"}, c{"c"}, d{"d"};
            csp::par(csp::proc("prefix", [in = c.reader(), out = a.writer()] {
                         out.write(0);
                         for (;;) out.write(in.read());
                     }),
                     csp::proc("delta", [in = a.reader(), o1 = b.writer(), o2 = d.writer()] {
                         for (;;) {
                             long v = in.read();
                             o1.write(v);
                             o2.write(v);
                         }
                     }),
                     csp::proc("succ", [in = d.reader(), out = c.writer()] {
                         for (;;) out.write(in.read() + 1);
                     }),
                     csp::proc("consumer", [in = b.reader(), a, b, c, d, loops] {
                         for (int i = 0; i < loops; ++i) in.read();
                         for (auto* ch : {&a, &b, &c, &d}) ch->poison();
                     }));
        });
    } catch (const csp::poisoned_error&) {
    }
    return rec.take();
}

// Two processes: ping sends `rounds` values to pong, which answers each.
inline csp::model::network ping(int rounds) {
    csp::model::recorder rec;
    csp::run([rounds] {
        csp::channel<int> there{"there"}, back{"back"};
        csp::par(csp::proc("ping", [out = there.writer(), in = back.reader(), rounds] {
                     for (int i = 0; i < rounds; ++i) {
                         out.write(i);
                         in.read();
                     }
                 }),
                 csp::proc("pong", [in = there.reader(), out = back.writer(), rounds] {
                     for (int i = 0; i < rounds; ++i) out.write(in.read());
                 }));
    });
    return rec.take();
}

// Three processes on a barrier 'phase' for `rounds` phases, P sending Q
// a value before each; then R resigns and P and Q sync once more. The
// model has two barriers: the phases of all three, and the last of two.
inline csp::model::network phases_with_a_resign(int rounds) {
    csp::model::recorder rec;
    csp::run([rounds] {
        csp::barrier b(3, "phase");
        csp::channel<int> data{"data"};
        csp::par(csp::proc("P", [&, out = data.writer()] {
                     for (int i = 0; i < rounds; ++i) out.write(i), b.sync();
                     b.sync();
                 }),
                 csp::proc("Q", [&, in = data.reader()] {
                     for (int i = 0; i < rounds; ++i) in.read(), b.sync();
                     b.sync();
                 }),
                 csp::proc("R", [&] {
                     for (int i = 0; i < rounds; ++i) b.sync();
                     b.resign();
                 }));
    });
    return rec.take();
}

// Two processes whose writes cross: each sends before it receives, on
// rendezvous channels, so the network deadlocks.
inline csp::model::network crossed_writes() {
    csp::model::network net;
    auto a = net.add_channel("a"), b = net.add_channel("b");
    auto root = net.add_process("main"), left = net.add_process("left"), right = net.add_process("right");
    net.par(root, {left, right});
    net.send(left, a);
    net.receive(left, b);
    net.send(right, b);
    net.receive(right, a);
    return net;
}

struct spin_result {
    bool ran = false;      // SPIN and the verifier ran and printed their summary
    int errors = -1;
    bool invalid_end = false;
    std::string output;
};

inline std::string run_command(const std::string& cmd) {
    std::string out;
    if (FILE* p = ::popen((cmd + " 2>&1").c_str(), "r")) {
        char buf[4096];
        while (std::size_t k = std::fread(buf, 1, sizeof buf, p)) out.append(buf, k);
        ::pclose(p);
    }
    return out;
}

// Exports `net` as Promela into a fresh folder, and runs SPIN's safety
// verification on it.
inline spin_result verify_with_spin(const csp::model::network& net, const std::string& name) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("csp_model_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    {
        std::ofstream f(dir / "model.pml");
        csp::model::write_promela(f, net, name);
    }
    spin_result r;
    r.output = run_command("cd " + dir.string() + " && spin -a model.pml && gcc -O0 -DSAFETY -o pan pan.c && ./pan");
    const auto at = r.output.find("errors: ");
    r.ran = r.output.find("State-vector") != std::string::npos && at != std::string::npos;
    if (r.ran) r.errors = std::stoi(r.output.substr(at + 8));
    r.invalid_end = r.output.find("invalid end state (") != std::string::npos;
    fs::remove_all(dir);
    return r;
}

// FDR's CSPm front end (libcspm): cspmcheck from ../shared/tools/cspm
// beside the source tree, or on PATH; empty when neither has it.
inline std::string cspmcheck_path() {
    namespace fs = std::filesystem;
    const fs::path beside = fs::path(CSP_SOURCE_DIR) / ".." / "shared" / "tools" / "cspm" / "cspmcheck";
    if (fs::exists(beside)) return fs::canonical(beside).string();
    std::string on_path = run_command("command -v cspmcheck");
    while (!on_path.empty() && (on_path.back() == '\n' || on_path.back() == ' ')) on_path.pop_back();
    return on_path;
}

#define SKIP_WITHOUT_CSPMCHECK()                                                                          \
    if (model_test::cspmcheck_path().empty())                                                           \
    GTEST_SKIP() << "skipped: FDR's CSPm front end (cspmcheck, from ../shared/tools/cspm beside the "   \
                    "source tree, or on PATH) is not on this machine"

struct cspm_result {
    bool accepted = false;
    std::string output;
};

// cspmcheck --eval on `files` (space-separated paths): parsed, type-checked,
// and every process an assertion names evaluated, as FDR does when it loads.
inline cspm_result check_cspm(const std::string& files) {
    cspm_result r;
    r.output = run_command("CSPMCHECK_TIMEOUT=300 " + cspmcheck_path() + " --eval " + files + "; echo cspmcheck_rc=$?");
    r.accepted = r.output.find("cspmcheck_rc=0") != std::string::npos;
    return r;
}

// Writes `net` as CSPm into a fresh file and checks it.
inline cspm_result check_cspm(const csp::model::network& net, const std::string& name) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("csp_cspm_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    {
        std::ofstream f(dir / "model.csp");
        csp::model::write_cspm(f, net, {name, {}});
    }
    auto r = check_cspm((dir / "model.csp").string());
    fs::remove_all(dir);
    return r;
}

}  // namespace model_test
