#pragma once
// What every collective algorithm declares about itself, once: its
// collective, its name, and when it can be used. The algorithm is a function
// object carrying this as `info` (broadcast.hpp, reduce.hpp, ...), and the
// registry (registry.hpp) lists them; dispatch, the selection table,
// csp-model --list, the tests and the benchmarks all iterate that list.
#include <cstdint>
#include <string>
#include <string_view>

namespace csp::collectives {

struct algorithm_info {
    std::string_view collective;
    std::string_view name;
    // The algorithm's number among its collective's, from 1: its place in
    // the registry's list (registry.hpp checks). A call's tags carry it
    // (tag.hpp), so ranks that chose different algorithms for one call never
    // take each other's messages.
    std::uint8_t code = 0;
    // Can be used only with an op that commutes (it folds in arrival order).
    bool needs_commuting_op = false;
    // Can be used only on vectors (it cuts them into blocks), and, for a
    // reduction, with an op that acts element by element (the built-in ops,
    // or any op that says `elementwise`).
    bool needs_elementwise = false;
    // Runs as intended only where the ranks share one address space (a
    // local_communicator); elsewhere it runs a message-passing fallback, and
    // the table does not choose it.
    bool needs_shared_memory = false;
    // Runs as intended only where the ranks are processes of one host that
    // share its memory (link_level::host, host_board.hpp); elsewhere it runs
    // a message-passing fallback, and the table does not choose it.
    bool needs_host_level = false;
    // Runs as intended only on a communicator with two levels of its own
    // (two_levels.hpp: a hybrid job's ranks of each node, then one leader
    // per node); elsewhere it runs a flat fallback, and the table does not
    // choose it.
    bool needs_two_levels = false;

    // "reduce/binomial", as reports and benchmarks print it.
    std::string qualified() const { return std::string(collective) + "/" + std::string(name); }
};

// The name of the algorithm of `collective` whose code is `code`; "" if it
// has none (registry.cpp).
std::string_view algorithm_name(std::string_view collective, std::uint8_t code);

}  // namespace csp::collectives
