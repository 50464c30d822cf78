#pragma once
#include <cstddef>
#include <limits>
#include <string>

#include "csp/error.hpp"

namespace csp {

// How a channel holds values between writer and reader.
struct buffer {
    enum class kind { none, fifo, unbounded, overwriting };
    kind how = kind::none;
    std::size_t capacity = 0;

    // Rendezvous: a write completes only when a reader has taken the value.
    static buffer none() { return {}; }
    // Up to n values; a writer blocks while n are held.
    static buffer fifo(std::size_t n) { return {kind::fifo, checked(n, "fifo")}; }
    // Writers never block.
    static buffer unbounded() { return {kind::unbounded, std::numeric_limits<std::size_t>::max()}; }
    // Up to n values; a write to a full buffer drops the oldest value.
    static buffer overwriting(std::size_t n) { return {kind::overwriting, checked(n, "overwriting")}; }

private:
    static std::size_t checked(std::size_t n, const char* what) {
        if (n == 0)
            throw usage_error(std::string("buffer::") + what +
                              "(0): capacity must be at least 1 (buffer::none() is the rendezvous)");
        return n;
    }
};

// Which sides of a channel may be shared by several processes. Shared sides
// are always safe; declaring a side single turns a second process waiting on
// it at the same time into a usage_error naming the channel (occam's rule).
enum class sharing { any_to_any, one_to_one, any_to_one, one_to_any };

}  // namespace csp
