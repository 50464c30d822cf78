#pragma once
// The flags every example takes:
//
//   --export-cspm FILE      the run's process network as CSPm, for FDR4
//   --export-promela FILE   ... as Promela, for SPIN
//   --export-dot FILE       ... as a Graphviz picture
//   --trace FILE            a timeline of the run (Chrome trace-event JSON,
//                           opens in ui.perfetto.dev)
//
// take() removes them from argv; run() runs the example's root with a
// recorder and a timeline installed as asked, then writes the files: a file
// it cannot write is an invalid_argument from take() (it tries to create
// each), or a runtime_error naming it after the run (said on stderr instead
// when the root threw, whose exception then goes on). A node
// started by csp-launch writes FILE.rank<r>, which csp-trace-merge joins into
// one job timeline; what crosses TCP is not in its model (the notes in the
// file say so). (csp-launch --trace FILE needs no flag in the program.)
#include <cstdio>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "csp/model/cspm.hpp"
#include "csp/model/dot.hpp"
#include "csp/model/promela.hpp"
#include "csp/model/recorder.hpp"
#include "csp/model/timeline.hpp"
#include "net/node_options.hpp"

namespace examples {

// This process's rank when a launcher started it, else -1.
inline int launched_rank() { return csp::net::node_options::from_environment().rank; }

class model_flags {
public:
    static model_flags take(int& argc, char** argv) {
        model_flags f;
        int out = 1;
        for (int i = 1; i < argc; ++i) {
            std::string* target = nullptr;
            const std::string a = argv[i];
            if (a == "--export-cspm") target = &f.cspm_;
            else if (a == "--export-promela") target = &f.promela_;
            else if (a == "--export-dot") target = &f.dot_;
            else if (a == "--trace") target = &f.trace_;
            if (!target) {
                argv[out++] = argv[i];
                continue;
            }
            if (i + 1 >= argc) throw std::invalid_argument(a + " needs a file name");
            *target = argv[++i];
            // Found now, not after a long run (which then says it again if
            // the file cannot be written in the end).
            if (!std::ofstream(per_node(*target)))
                throw std::invalid_argument(a + ": cannot write " + per_node(*target));
        }
        argc = out;
        argv[argc] = nullptr;
        return f;
    }

    bool exporting() const { return !cspm_.empty() || !promela_.empty() || !dot_.empty(); }

    // Runs root() under the observers asked for; writes the files after,
    // also when root() throws.
    template <class F>
    auto run(const std::string& title, F root) {
        if (exporting()) rec_ = std::make_unique<csp::model::recorder>();
        if (!trace_.empty()) timeline_ = std::make_unique<csp::model::timeline>(launched_rank());
        struct on_throw {
            model_flags* f;
            const std::string& title;
            bool returned = false;
            ~on_throw() {
                if (returned) return;
                for (const auto& file : f->write_files(title))
                    std::fprintf(stderr, "%s: cannot write %s\n", title.c_str(), file.c_str());
            }
        } at_end{this, title};
        auto written = [&] {
            at_end.returned = true;
            const auto failed = write_files(title);
            if (!failed.empty()) throw std::runtime_error("cannot write " + failed.front());
        };
        if constexpr (std::is_void_v<decltype(root())>) {
            root();
            written();
        } else {
            auto result = root();
            written();
            return result;
        }
    }

private:
    // Writes every file asked for; returns those it could not write.
    std::vector<std::string> write_files(const std::string& title) {
        std::vector<std::string> failed;
        if (timeline_) {
            write(trace_, failed, [&](std::ostream& os) { timeline_->write(os); });
            timeline_.reset();
        }
        if (!rec_) return failed;
        csp::model::network net = rec_->take();
        rec_.reset();
        if (launched_rank() >= 0)
            net.notes.push_back("recorded in one node of a job: messages to and from other nodes are not modelled");
        if (!cspm_.empty())
            write(cspm_, failed, [&](std::ostream& os) { csp::model::write_cspm(os, net, {title, {}}); });
        if (!promela_.empty())
            write(promela_, failed, [&](std::ostream& os) { csp::model::write_promela(os, net, title); });
        if (!dot_.empty()) write(dot_, failed, [&](std::ostream& os) { csp::model::write_dot(os, net, title); });
        return failed;
    }
    template <class W>
    static void write(const std::string& file, std::vector<std::string>& failed, W w) {
        std::ofstream os(per_node(file));
        if (os) w(os);
        os.flush();
        if (!os) failed.push_back(per_node(file));
    }
    static std::string per_node(const std::string& file) {
        const int rank = launched_rank();
        return rank >= 0 ? file + ".rank" + std::to_string(rank) : file;
    }

    std::string cspm_, promela_, dot_, trace_;
    std::unique_ptr<csp::model::recorder> rec_;
    std::unique_ptr<csp::model::timeline> timeline_;
};

}  // namespace examples
