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
//   ring              vectors with a commuting element-wise op (the
//                     built-in ones): a ring reduce_scatter of n nearly
//                     equal blocks, then a ring allgather of the blocks.
//                     2n(n-1) messages of about 1/n of the vector, 2(n-1)
//                     rounds: each rank sends and folds about 2(n-1)/n of
//                     the vector in all, however many ranks (for large
//                     vectors; the tree and the butterfly send it whole
//                     log2 n times).
#include <string>
#include <utility>
#include <vector>

#include "collectives/allgather.hpp"
#include "collectives/broadcast.hpp"
#include "collectives/reduce.hpp"
#include "collectives/reduce_scatter.hpp"
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

struct allreduce_ring_fn {
    static constexpr algorithm_info info{"allreduce", "ring", true, true};

    template <class C, class T, class Op>
    T operator()(C& comm, T value, const Op& op, stream s = {}) const {
        if constexpr (!detail::is_vector<T>::value) {
            throw usage_error("allreduce ring: cuts a vector into blocks; it cannot take a single value");
        } else {
            if (!commutes(op) || !acts_elementwise(op))
                throw usage_error("allreduce ring: needs an op that commutes and acts element by element");
            const tag t = comm.next_tag(s);
            detail::announce(comm, info, t);
            const auto n = static_cast<std::size_t>(comm.size()), length = value.size();
            std::vector<std::size_t> counts(n, length / n);
            for (std::size_t i = 0; i < length % n; ++i) ++counts[i];
            auto mine = reduce_scatter_ring(comm, std::move(value), counts, op, s);
            const auto blocks = allgather_ring(comm, std::move(mine), s);
            T out;
            out.reserve(length);
            for (const auto& b : blocks) out.insert(out.end(), b.begin(), b.end());
            return out;
        }
    }
};
inline constexpr allreduce_ring_fn allreduce_ring{};

}  // namespace csp::collectives
