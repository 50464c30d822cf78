#pragma once
// The arithmetic every Jacobi variant shares (examples/jacobi.cpp and the
// plain-MPI peer in bench/mpi_jacobi.cpp), so that they differ only in how
// they communicate: a five-point relaxation of a band of rows of a grid
// `cols` wide, whose left and right neighbours are the fixed boundary 0.
#include <cstddef>

namespace examples::jacobi {

// Writes `rows` relaxed rows to `out`. `above` is the row just above the
// band's first row, `below` the row just below its last; the band's rows are
// `band[0..rows)`.
inline void relax(const double* above, const double* band, const double* below, double* out, int rows, int cols) {
    for (int i = 0; i < rows; ++i) {
        const double* up = i == 0 ? above : band + static_cast<std::ptrdiff_t>(i - 1) * cols;
        const double* mid = band + static_cast<std::ptrdiff_t>(i) * cols;
        const double* down = i == rows - 1 ? below : band + static_cast<std::ptrdiff_t>(i + 1) * cols;
        double* o = out + static_cast<std::ptrdiff_t>(i) * cols;
        o[0] = 0.25 * (up[0] + down[0] + mid[1]);
        for (int j = 1; j < cols - 1; ++j) o[j] = 0.25 * (up[j] + down[j] + mid[j - 1] + mid[j + 1]);
        if (cols > 1) o[cols - 1] = 0.25 * (up[cols - 1] + down[cols - 1] + mid[cols - 2]);
    }
}

// The grid's fixed top boundary (a hot edge); the other edges are 0.
inline constexpr double top_boundary = 1.0;

}  // namespace examples::jacobi
