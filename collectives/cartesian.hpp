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
std::vector<int> balanced_dims(int n, int ndims);

class cartesian {
public:
    cartesian(std::vector<int> dims, std::vector<bool> periodic = {});

    int size() const noexcept { return size_; }
    std::size_t ndims() const noexcept { return dims_.size(); }
    const std::vector<int>& dims() const noexcept { return dims_; }

    std::vector<int> coords(int rank) const;

    // The rank at `c`, wrapping periodic dimensions; no_rank outside a
    // non-periodic one.
    int rank_of(std::vector<int> c) const;

    shift_pair shift(int rank, std::size_t dim, int displacement) const;

    // The 2 * ndims neighbours of `rank`: along each dimension, the one
    // before and the one after (no_rank past an edge).
    std::vector<int> neighbours(int rank) const;

private:
    void check(int rank) const;

    std::vector<int> dims_;
    std::vector<bool> periodic_;
    int size_ = 1;
};

}  // namespace csp::collectives
