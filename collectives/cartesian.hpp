#pragma once
// Ranks laid out on a grid (MPI's Cartesian topology, without a new
// communicator): rank <-> coordinates, row-major (the last dimension varies
// fastest), and the neighbours of a rank along each dimension, wrapping
// around where the dimension is periodic and `no_rank` past an edge where
// it is not.
//
//   csp::collectives::cartesian grid(csp::collectives::balanced_dims(comm.size(), 2), {false, true});
//   auto [up, down] = grid.shift(comm.rank(), 0, 1);   // source and destination of a shift by +1
//   auto at = grid.coords(comm.rank());
//
// A shift by +d along dimension k names, for rank r, the rank d cells
// before r (`source`, whose data r receives) and the rank d cells after it
// (`destination`, where r's data goes), as MPI_Cart_shift does.
#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "csp/error.hpp"

namespace csp::collectives {

// No rank there: a send to it or a receive from it does nothing
// (neighbours.hpp), as MPI_PROC_NULL.
inline constexpr int no_rank = -1;

struct shift_pair {
    int source;
    int destination;
};

// `n` ranks in `ndims` dimensions, as balanced as the factors of n allow,
// largest first (MPI_Dims_create): 12 in 2 -> {4, 3}; 8 in 3 -> {2, 2, 2}.
inline std::vector<int> balanced_dims(int n, int ndims) {
    if (n < 1 || ndims < 1) throw usage_error("balanced_dims: needs at least one rank and one dimension");
    std::vector<int> dims(static_cast<std::size_t>(ndims), 1);
    // Each prime factor, largest first, goes to the dimension smallest so far.
    std::vector<int> primes;
    int m = n;
    for (int p = 2; p * p <= m; ++p)
        while (m % p == 0) {
            primes.push_back(p);
            m /= p;
        }
    if (m > 1) primes.push_back(m);
    for (auto p = primes.rbegin(); p != primes.rend(); ++p) {
        auto smallest = dims.begin();
        for (auto d = dims.begin(); d != dims.end(); ++d)
            if (*d < *smallest) smallest = d;
        *smallest *= *p;
    }
    std::sort(dims.rbegin(), dims.rend());
    return dims;
}

class cartesian {
public:
    cartesian(std::vector<int> dims, std::vector<bool> periodic = {})
        : dims_(std::move(dims)), periodic_(std::move(periodic)) {
        if (dims_.empty()) throw usage_error("cartesian: at least one dimension");
        if (periodic_.empty()) periodic_.assign(dims_.size(), false);
        if (periodic_.size() != dims_.size())
            throw usage_error("cartesian: " + std::to_string(dims_.size()) + " dimensions but " +
                              std::to_string(periodic_.size()) + " periodic flags");
        size_ = 1;
        for (int d : dims_) {
            if (d < 1) throw usage_error("cartesian: a dimension of " + std::to_string(d) + " ranks");
            size_ *= d;
        }
    }

    int size() const noexcept { return size_; }
    std::size_t ndims() const noexcept { return dims_.size(); }
    const std::vector<int>& dims() const noexcept { return dims_; }

    std::vector<int> coords(int rank) const {
        check(rank);
        std::vector<int> c(dims_.size());
        for (std::size_t k = dims_.size(); k-- > 0;) {
            c[k] = rank % dims_[k];
            rank /= dims_[k];
        }
        return c;
    }

    // The rank at `c`, wrapping periodic dimensions; no_rank outside a
    // non-periodic one.
    int rank_of(std::vector<int> c) const {
        if (c.size() != dims_.size())
            throw usage_error("cartesian: " + std::to_string(c.size()) + " coordinates for " +
                              std::to_string(dims_.size()) + " dimensions");
        int r = 0;
        for (std::size_t k = 0; k < dims_.size(); ++k) {
            if (c[k] < 0 || c[k] >= dims_[k]) {
                if (!periodic_[k]) return no_rank;
                c[k] = ((c[k] % dims_[k]) + dims_[k]) % dims_[k];
            }
            r = r * dims_[k] + c[k];
        }
        return r;
    }

    shift_pair shift(int rank, std::size_t dim, int displacement) const {
        if (dim >= dims_.size())
            throw usage_error("cartesian: dimension " + std::to_string(dim) + " of " + std::to_string(dims_.size()));
        auto c = coords(rank);
        auto before = c, after = c;
        before[dim] -= displacement;
        after[dim] += displacement;
        return {rank_of(before), rank_of(after)};
    }

    // The 2 * ndims neighbours of `rank`: along each dimension, the one
    // before and the one after (no_rank past an edge).
    std::vector<int> neighbours(int rank) const {
        std::vector<int> out;
        for (std::size_t k = 0; k < dims_.size(); ++k) {
            const auto s = shift(rank, k, 1);
            out.push_back(s.source);
            out.push_back(s.destination);
        }
        return out;
    }

private:
    void check(int rank) const {
        if (rank < 0 || rank >= size_)
            throw usage_error("cartesian: rank " + std::to_string(rank) + " is outside the grid of " +
                              std::to_string(size_));
    }

    std::vector<int> dims_;
    std::vector<bool> periodic_;
    int size_ = 1;
};

}  // namespace csp::collectives
