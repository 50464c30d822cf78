#pragma once
// occam-pi's BARRIER: processes enrolled on a barrier synchronise together.
// sync() blocks until every enrolled process has called sync() in the current
// phase; enroll() and resign() change how many that is. A resign that leaves
// everyone else already waiting completes the phase.
#include <cstddef>
#include <cstdint>
#include <source_location>
#include <string>

#include "csp/spinlock.hpp"
#include "csp/detail/wait_queue.hpp"

namespace csp {

class barrier final : public wait_site {
public:
    // An unnamed barrier is labelled by where it was made ("barrier (made at
    // sim.cpp:40)"), as a channel is, so a deadlock report points at the code.
    explicit barrier(std::size_t enrolled = 0, std::string name = {},
                     std::source_location at = std::source_location::current());
    barrier(const barrier&) = delete;
    barrier& operator=(const barrier&) = delete;

    void enroll(std::size_t n = 1);
    // Throws usage_error if nobody is enrolled.
    void resign();
    // Throws usage_error if nobody is enrolled.
    void sync();

    std::size_t enrolled() const;
    // Unique for the life of the program (never reused), like a channel's.
    std::uint64_t id() const noexcept { return id_; }
    // How many phases have completed.
    std::uint64_t phase() const;
    std::string label() const;
    // The name it was given ("" if none).
    const std::string& name() const noexcept { return name_; }

    void describe(std::string& out) const override { out.append("syncing on ").append(label()); }

private:
    void complete_phase_locked();

    mutable spinlock lock_;
    detail::wait_queue waiting_;
    std::size_t enrolled_;
    std::size_t arrived_ = 0;
    std::uint64_t phase_ = 0;
    std::string name_;
    std::source_location made_at_;
    std::uint64_t id_;
};

}  // namespace csp
