// Every CSPm script the exporter writes loads in FDR's own front end
// (cspmcheck --eval: parse, type check, evaluation of every asserted
// process), loops come out folded, labels cannot break a script, and the
// model has the program's deadlocks and no others.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "model_fixture.hpp"

namespace fs = std::filesystem;
namespace model = csp::model;

namespace {

std::string cspm_text(const model::network& net, const std::string& title = "net") {
    std::ostringstream os;
    model::write_cspm(os, net, {title, {}});
    return os.str();
}

}  // namespace

TEST(cspm_check, every_golden_file_loads_with_evaluation) {
    SKIP_WITHOUT_CSPMCHECK();
    std::string files;
    int n = 0;
    for (const auto& e : fs::directory_iterator(GOLDEN_DIR))
        if (e.path().extension() == ".csp") files.append(" ").append(e.path().string()), ++n;
    ASSERT_GE(n, 3);
    const auto r = model_test::check_cspm(files);
    EXPECT_TRUE(r.accepted) << r.output;
}

TEST(cspm_check, every_collective_at_2_3_5_and_8_ranks_loads_with_evaluation) {
    SKIP_WITHOUT_CSPMCHECK();
    const fs::path dir = fs::temp_directory_path() / ("csp_cspm_collectives_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::istringstream names(model_test::run_command(std::string(CSP_MODEL_TOOL) + " --list"));
    std::string files, name;
    int written = 0;
    while (names >> name) {
        for (int n : {2, 3, 5, 8}) {
            const auto file = dir / (name + "_" + std::to_string(n) + ".csp");
            const auto out = model_test::run_command(std::string(CSP_MODEL_TOOL) + " " + name + " " +
                                                     std::to_string(n) + " --export-cspm " + file.string());
            ASSERT_TRUE(fs::exists(file)) << name << " " << n << ": " << out;
            files.append(" ").append(file.string());
            ++written;
        }
    }
    EXPECT_GE(written, 4 * 20) << "csp-model --list gave too few collectives";
    const auto r = model_test::check_cspm(files);
    EXPECT_TRUE(r.accepted) << r.output;
    fs::remove_all(dir);
}

TEST(cspm_check, a_real_deadlock_keeps_its_assertion_and_loads) {
    SKIP_WITHOUT_CSPMCHECK();
    const auto net = model_test::crossed_writes();
    EXPECT_NE(cspm_text(net).find("assert SYSTEM :[deadlock free [F]]"), std::string::npos);
    const auto r = model_test::check_cspm(net, "crossed");
    EXPECT_TRUE(r.accepted) << r.output;
    const auto spin = model_test::verify_with_spin(net, "crossed_cspm");
    ASSERT_TRUE(spin.ran) << spin.output;
    EXPECT_TRUE(spin.invalid_end) << spin.output;
}

// A label is the user's text: it must not end a comment, start a
// definition, or open a block comment in any of the formats.
TEST(cspm_check, labels_cannot_break_or_inject_into_a_script) {
    model::network net;
    const std::string evil = "x\nSYSTEM = STOP\n{- */ \"q\\ -- ";
    auto c = net.add_channel(model::identifier("c", 0, evil));
    auto root = net.add_process(evil), w = net.add_process(evil), r = net.add_process(evil);
    net.par(root, {w, r});
    net.send(w, c);
    net.receive(r, c);
    net.notes.push_back(evil);
    const std::string text = cspm_text(net, evil);
    EXPECT_EQ(text.find("\nSYSTEM = STOP"), std::string::npos) << text;
    // The label's text appears in comments only (identifiers keep letters and digits).
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        if (line.find("SYSTEM = STOP") != std::string::npos) {
            EXPECT_EQ(line.rfind("--", 0), 0u) << line;
        }
    }
    EXPECT_NE(text.find("-- x SYSTEM = STOP {- * / \"q\\ -- : exported by csp::model."), std::string::npos) << text;

    std::ostringstream pml, dot;
    model::write_promela(pml, net, evil);
    model::write_dot(dot, net, evil);
    EXPECT_EQ(pml.str().find("*/ \""), std::string::npos) << pml.str();  // only the header's own */ closes
    EXPECT_EQ(dot.str().find("\nSYSTEM"), std::string::npos) << dot.str();
    EXPECT_NE(dot.str().find("\\\"q\\\\"), std::string::npos) << dot.str();  // quote and backslash escaped

    const auto spin = model_test::verify_with_spin(net, "evil");
    ASSERT_TRUE(spin.ran) << spin.output;
    EXPECT_EQ(spin.errors, 0) << spin.output;
    if (model_test::cspmcheck_path().empty()) GTEST_SKIP() << "cspmcheck is not on this machine: CSPm not loaded";
    const auto loaded = model_test::check_cspm(net, "evil");
    EXPECT_TRUE(loaded.accepted) << loaded.output;
}

// The program ends with the value still in the channel; so must the model.
TEST(cspm_check, a_value_sent_and_never_read_is_no_deadlock) {
    model::network net;
    auto c = net.add_channel("mailbox", 2);
    auto root = net.add_process("main"), w = net.add_process("writer");
    net.par(root, {w});
    net.send(w, c);
    const std::string text = cspm_text(net);
    // The buffer may end once every value came in, whatever it still holds.
    EXPECT_NE(text.find("[] k == 0 & SKIP"), std::string::npos) << text;
    EXPECT_EQ(text.find("h == 0 and k == 0"), std::string::npos) << text;
    const auto spin = model_test::verify_with_spin(net, "unread");
    ASSERT_TRUE(spin.ran) << spin.output;
    EXPECT_EQ(spin.errors, 0) << spin.output;
    if (model_test::cspmcheck_path().empty()) GTEST_SKIP() << "cspmcheck is not on this machine: CSPm not loaded";
    EXPECT_TRUE(model_test::check_cspm(net, "unread").accepted);
}

// Processes that no par started (a node's own processes, a process group's
// members) are components of the model; daemons and their channels are not.
TEST(cspm_check, processes_no_par_started_are_modelled_and_daemons_left_out) {
    model::network net;
    auto data = net.add_channel("data", 1), request = net.add_channel("request", 4);
    auto root = net.add_process("main"), producer = net.add_process("producer"),
         consumer = net.add_process("consumer"), service = net.add_process("service");
    net.processes[service].daemon = true;
    net.send(producer, data);
    net.send(producer, request);  // to the daemon
    net.receive(consumer, data);
    net.receive(service, request);
    (void)root;
    const auto view = model::program_view(net);
    ASSERT_EQ(view.processes.size(), 3u);
    ASSERT_EQ(view.channels.size(), 1u);
    EXPECT_EQ(view.channels[0].name, "data");
    EXPECT_EQ(view.processes[1].body.size(), 1u);  // the request to the daemon is not in the model
    const std::string text = cspm_text(net);
    EXPECT_NE(text.find("P1 = data_in.1 -> SKIP"), std::string::npos) << text;  // no go: it runs from the start
    EXPECT_NE(text.find("daemon"), std::string::npos) << text;                  // and a note says what was left out

    const auto spin = model_test::verify_with_spin(net, "free_processes");
    ASSERT_TRUE(spin.ran) << spin.output;
    EXPECT_EQ(spin.errors, 0) << spin.output;
    if (model_test::cspmcheck_path().empty()) GTEST_SKIP() << "cspmcheck is not on this machine: CSPm not loaded";
    EXPECT_TRUE(model_test::check_cspm(net, "free_processes").accepted);
}

// A barrier is one event in the alphabet of each of its members, which the
// alphabetised parallel makes all of them take together; loops that sync
// fold like loops that communicate.
TEST(cspm_check, a_barrier_is_an_event_its_members_take_together) {
    const auto net = model_test::phases_with_a_resign(6);
    const std::string text = cspm_text(net, "phases");
    EXPECT_NE(text.find("channel b0_phase\n"), std::string::npos) << text;
    EXPECT_NE(text.find("channel b1_phase\n"), std::string::npos) << text;
    EXPECT_NE(text.find("P1_0(n) = if n == 0 then P1_1 else c0_data.1.2 -> b0_phase -> P1_0(n - 1)"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("ALPHA(1) = {b0_phase, b1_phase, c0_data.1.2, finish.1, go.1}"), std::string::npos) << text;
    EXPECT_NE(text.find("ALPHA(3) = {b0_phase, finish.3, go.3}"), std::string::npos) << text;  // R: not b1
    std::ostringstream dot;
    model::write_dot(dot, net, "phases");
    EXPECT_NE(dot.str().find("b1 [label=\"b1_phase\", shape=octagon"), std::string::npos) << dot.str();
    EXPECT_NE(dot.str().find("p3 -> b0 [dir=none"), std::string::npos) << dot.str();
    EXPECT_EQ(dot.str().find("p3 -> b1"), std::string::npos) << dot.str();
    if (model_test::cspmcheck_path().empty()) GTEST_SKIP() << "cspmcheck is not on this machine: CSPm not loaded";
    const auto r = model_test::check_cspm(net, "phases");
    EXPECT_TRUE(r.accepted) << r.output;
}

TEST(cspm_fold, commstime_is_written_as_four_recursive_processes) {
    const auto net = model_test::commstime(1000);
    const std::string text = cspm_text(net, "commstime");
    EXPECT_LT(text.size(), 10u * 1024) << text;
    // Each of the four repeats its cycle, written once as a counted recursion.
    for (const char* who : {"prefix", "delta", "succ", "consumer"})
        EXPECT_TRUE(std::regex_search(text, std::regex(std::string("-- Folded: ") + who +
                                                       R"( \(P\d\): \d steps? repeated (N|N \+ \d|\d+) times)")))
            << who << ":\n"
            << text;
    EXPECT_TRUE(std::regex_search(text, std::regex(R"(P\d_\d\(n\) = if n == 0 then .* else .* -> P\d_\d\(n - 1\))")))
        << text;
    // The consumer's 1000th read wakes delta into the run-next slot: it and
    // prefix make one more step each before the poison, the others none.
    EXPECT_NE(text.find("\nN = 1000\n"), std::string::npos) << text;

    const auto spin = model_test::verify_with_spin(net, "commstime_folded");
    ASSERT_TRUE(spin.ran) << spin.output;
    EXPECT_EQ(spin.errors, 0) << spin.output;
    if (model_test::cspmcheck_path().empty()) GTEST_SKIP() << "cspmcheck is not on this machine: CSPm not loaded";
    const auto r = model_test::check_cspm(net, "commstime_folded");
    EXPECT_TRUE(r.accepted) << r.output;
}

TEST(cspm_fold, folding_keeps_every_step_in_order) {
    // prefix, a cycle of three repeated five times, a different step, a cycle of one seven times
    std::vector<model::step> body;
    auto comm = [](std::size_t c) {
        return model::step{model::step::kind::communicate, c, model::direction::send, {}};
    };
    body.push_back(comm(9));
    for (int i = 0; i < 5; ++i) body.push_back(comm(1)), body.push_back(comm(2)), body.push_back(comm(3));
    body.push_back(comm(8));
    for (int i = 0; i < 7; ++i) body.push_back(comm(4));
    model::process proc;
    proc.body = body;
    const auto runs = model::fold(proc);
    std::vector<std::size_t> replay;
    std::size_t at = 0;
    for (const auto& r : runs) {
        EXPECT_EQ(r.begin, at) << "runs must cover the body in order";
        for (std::size_t t = 0; t < r.times; ++t)
            for (std::size_t i = r.begin; i < r.end; ++i) replay.push_back(body[i].channel);
        at = r.begin + (r.end - r.begin) * r.times;
    }
    EXPECT_EQ(at, body.size());
    std::vector<std::size_t> want;
    for (const auto& s : body) want.push_back(s.channel);
    EXPECT_EQ(replay, want);
    std::size_t folded = 0;
    for (const auto& r : runs) folded += r.times > 1;
    EXPECT_EQ(folded, 2u);
    EXPECT_LE(runs.size(), 5u);
}

namespace {

// A multiplexer: two producers send 6 and 4 values; the multiplexer takes
// 10 from either in an alternation and passes each on to a consumer.
model::network multiplexer() {
    model::recorder rec;
    csp::run([] {
        csp::channel<int> a{"a"}, b{"b"}, out{"out"};
        auto producer = [](csp::writer<int> w, int n) {
            return [w, n] {
                for (int i = 0; i < n; ++i) w.write(i);
            };
        };
        csp::par(csp::proc("left", producer(a.writer(), 6)), csp::proc("right", producer(b.writer(), 4)),
                 csp::proc("mux", [ra = a.reader(), rb = b.reader(), w = out.writer()] {
                     int v = 0;
                     for (int i = 0; i < 10; ++i) {
                         csp::select(csp::input(ra, v), csp::input(rb, v));
                         w.write(v);
                     }
                 }),
                 csp::proc("sink", [r = out.reader()] {
                     for (int i = 0; i < 10; ++i) r.read();
                 }));
    });
    return rec.take();
}

}  // namespace

// The loop shows what followed each branch (the same pass-on), so the model
// offers both, as the program did, whichever order the run happened to take.
TEST(cspm_fold, an_alternation_repeated_in_a_loop_is_written_as_the_choice_it_was) {
    const auto net = multiplexer();
    const std::string text = cspm_text(net, "mux");
    EXPECT_TRUE(std::regex_search(
        text, std::regex(R"(P\d_\d\(n\) = if n == 0 then .* else \(c\d_[\w.]+ -> SKIP \[\] c\d_[\w.]+ -> SKIP\) ; )")))
        << text;
    EXPECT_EQ(text.find(model::alternation_note), std::string::npos) << text;
    std::ostringstream pml;
    model::write_promela(pml, net, "mux");
    EXPECT_NE(pml.str().find("if\n"), std::string::npos) << pml.str();
    const auto spin = model_test::verify_with_spin(net, "mux");
    ASSERT_TRUE(spin.ran) << spin.output;
    EXPECT_EQ(spin.errors, 0) << spin.output;
    if (model_test::cspmcheck_path().empty()) GTEST_SKIP() << "cspmcheck is not on this machine: CSPm not loaded";
    const auto r = model_test::check_cspm(net, "mux");
    EXPECT_TRUE(r.accepted) << r.output;
}

// Once only: the run shows what followed one branch, so that is what is written.
TEST(cspm_fold, an_alternation_seen_once_is_written_as_the_branch_taken_with_a_note) {
    model::network net;
    auto x = net.add_channel("x"), y = net.add_channel("y");
    auto root = net.add_process("main"), chooser = net.add_process("chooser"), sender = net.add_process("sender");
    net.par(root, {chooser, sender});
    net.choice(chooser, {{x, model::direction::receive}, {y, model::direction::receive}}, 1);
    net.send(sender, y);
    const std::string text = cspm_text(net);
    EXPECT_NE(text.find("P1 = go.1 -> y.2.1 -> finish.1 -> SKIP"), std::string::npos) << text;
    EXPECT_NE(text.find(model::alternation_note), std::string::npos) << text;
    if (model_test::cspmcheck_path().empty()) GTEST_SKIP() << "cspmcheck is not on this machine: CSPm not loaded";
    EXPECT_TRUE(model_test::check_cspm(net, "once").accepted);
}
