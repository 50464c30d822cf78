#pragma once
// What a plain allgather of values whose sizes may differ between ranks
// sends first (dispatch.hpp): a rank's part if it is smaller than the size
// at which the table would choose another algorithm, and its size always.
// When every part came, that first allgather was the call; otherwise every
// rank knows the largest size from it, and all choose alike by it.
#include <cstdint>
#include <optional>

namespace csp::collectives::detail {

template <class T>
struct part_or_size {
    std::uint64_t size = 0;
    std::optional<T> part;

    template <class A>
    void serialize(A& a) {
        a(size, part);
    }
};

}  // namespace csp::collectives::detail
