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
// recorder and a timeline installed as asked, then writes the files. A node
// started by csp-launch writes FILE.rank<r>, which csp-trace-merge joins into
// one job timeline; what crosses TCP is not in its model (the notes in the
// file say so). (csp-launch --trace FILE needs no flag in the program.)
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>

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
        }
        argc = out;
        argv[argc] = nullptr;
        return f;
    }

    bool exporting() const { return !cspm_.empty() || !promela_.empty() || !dot_.empty(); }

    // Runs root() under the observers asked for; writes the files after,
    // also when root() throws (the exception then goes on).
    template <class F>
    auto run(const std::string& title, F root) {
        if (exporting()) rec_ = std::make_unique<csp::model::recorder>();
        if (!trace_.empty()) timeline_ = std::make_unique<csp::model::timeline>(launched_rank());
        struct finish {
            model_flags* f;
            std::string title;
            ~finish() { f->write_files(title); }
        } at_end{this, title};
        return root();
    }

private:
    void write_files(const std::string& title) {
        if (timeline_) {
            std::ofstream os(per_node(trace_));
            timeline_->write(os);
            timeline_.reset();
        }
        if (!rec_) return;
        csp::model::network net = rec_->take();
        rec_.reset();
        if (launched_rank() >= 0)
            net.notes.push_back("recorded in one node of a job: messages to and from other nodes are not modelled");
        if (!cspm_.empty()) write(cspm_, [&](std::ostream& os) { csp::model::write_cspm(os, net, {title, {}}); });
        if (!promela_.empty()) write(promela_, [&](std::ostream& os) { csp::model::write_promela(os, net, title); });
        if (!dot_.empty()) write(dot_, [&](std::ostream& os) { csp::model::write_dot(os, net, title); });
    }
    template <class W>
    static void write(const std::string& file, W w) {
        std::ofstream os(per_node(file));
        w(os);
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
