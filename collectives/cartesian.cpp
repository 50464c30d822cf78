#include "collectives/cartesian.hpp"

#include <algorithm>
#include <string>

namespace csp::collectives {

std::vector<int> balanced_dims(int n, int ndims) {
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

cartesian::cartesian(std::vector<int> dims, std::vector<bool> periodic)
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

std::vector<int> cartesian::coords(int rank) const {
    check(rank);
    std::vector<int> c(dims_.size());
    for (std::size_t k = dims_.size(); k-- > 0;) {
        c[k] = rank % dims_[k];
        rank /= dims_[k];
    }
    return c;
}

int cartesian::rank_of(std::vector<int> c) const {
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

shift_pair cartesian::shift(int rank, std::size_t dim, int displacement) const {
    if (dim >= dims_.size())
        throw usage_error("cartesian: dimension " + std::to_string(dim) + " of " + std::to_string(dims_.size()));
    auto c = coords(rank);
    auto before = c, after = c;
    before[dim] -= displacement;
    after[dim] += displacement;
    return {rank_of(before), rank_of(after)};
}

std::vector<int> cartesian::neighbours(int rank) const {
    std::vector<int> out;
    for (std::size_t k = 0; k < dims_.size(); ++k) {
        const auto s = shift(rank, k, 1);
        out.push_back(s.source);
        out.push_back(s.destination);
    }
    return out;
}

void cartesian::check(int rank) const {
    if (rank < 0 || rank >= size_)
        throw usage_error("cartesian: rank " + std::to_string(rank) + " is outside the grid of " +
                          std::to_string(size_));
}

}  // namespace csp::collectives
