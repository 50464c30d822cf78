#pragma once
// Allreduce: every rank gets v0 op v1 op ... op v(n-1).
//
//   reduce_broadcast  a binomial reduce with parallel receive to rank 0,
//                     then a binomial broadcast from it (listing 12).
//                     2(n-1) messages, 2 ceil(log2 n) rounds; a rank that
//                     is done reducing waits for the broadcast.
//   butterfly         recursive doubling (Aspen paper, section 2.1): in
//                     round k each rank exchanges its partial value with
//                     rank xor 2^k and both fold, so reduce and broadcast
//                     happen in one sweep. Sizes that are not a power of
//                     two fold the extra ranks in first and hand them the
//                     result last (topology::butterfly_schedule). Keeps
//                     rank order. n log2 n messages, log2 n rounds (+2).
#include <utility>

#include "collectives/broadcast.hpp"
#include "collectives/reduce.hpp"
#include "collectives/schedule.hpp"

namespace csp::collectives {

struct allreduce_reduce_broadcast_fn {
    static constexpr algorithm_info info{"allreduce", "reduce_broadcast"};

    template <class C, class T, class Op>
    T operator()(C& comm, T value, const Op& op, stream s = {}) const {
        const tag t = comm.next_tag(s);
        detail::announce(comm, info, t);
        auto total = reduce_binomial_parallel(comm, std::move(value), op, 0, s);
        return broadcast_binomial(comm, total ? std::move(*total) : T{}, 0, s);
    }
};
inline constexpr allreduce_reduce_broadcast_fn allreduce_reduce_broadcast{};

struct allreduce_butterfly_fn {
    static constexpr algorithm_info info{"allreduce", "butterfly"};

    template <class C, class T, class Op>
    T operator()(C& comm, T value, const Op& op, stream s = {}) const {
        const tag t = comm.next_tag(s);
        detail::announce(comm, info, t);
        const auto plans = detail::butterfly_plans(comm.size());
        auto out = run_plan(comm, (*plans)[static_cast<std::size_t>(comm.rank())], std::optional<T>(std::move(value)),
                            op, t);
        return std::move(*out);
    }
};
inline constexpr allreduce_butterfly_fn allreduce_butterfly{};

}  // namespace csp::collectives
