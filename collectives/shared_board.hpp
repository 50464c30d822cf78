#pragma once
// Where the ranks of a local group (processes of one address space) meet
// for a collective without passing messages: STAPERS's intra-node
// aggregation. Each rank copies its part into its slot, every rank syncs on
// one barrier, and each then reads every part it needs in place.
//
// One board per stream of a local group (local_communicator.hpp), so that
// collectives on different streams never share slots.
//
// Invariants
//  - Slots come in two sets; a rank's meeting number m on this board (the
//    same at every rank: the ranks call the stream's collectives in one
//    order) uses set m & 1. A rank writes set p for meeting m+2 only after
//    the barrier of meeting m+1, which no rank passes before every rank has
//    arrived there, that is, finished reading set p for meeting m. So one
//    barrier per meeting suffices, and no rank's slot is overwritten while
//    another reads it. (Not the tag's sequence number: collectives of the
//    stream that pass messages instead come between meetings, and a rank
//    may run through those while another still reads.)
//  - Every rank records the type it passed and its call's arguments (root,
//    op: detail/call_args.hpp); a call where they differ throws
//    agreed_error at every rank (each reads every rank's).
//  - fail() makes every meeting, waiting or later, throw the error. A rank
//    that failed cannot come to the barrier any more, so fail() resigns it:
//    the others' phase completes without it, and they find the error.
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <typeindex>
#include <typeinfo>
#include <unordered_map>
#include <vector>

#include "collectives/detail/call_args.hpp"
#include "collectives/revocation.hpp"
#include "collectives/tag.hpp"
#include "csp/barrier.hpp"
#include "csp/error.hpp"
#include "csp/type_name.hpp"

namespace csp::collectives {

class shared_board {
public:
    explicit shared_board(int size, std::exception_ptr failed = nullptr)
        : size_(static_cast<std::size_t>(size)), sync_(size_, "shared board"), meetings_(size_, 0),
          failed_(std::move(failed)) {
        has_failed_.store(failed_ != nullptr, std::memory_order_relaxed);
        for (auto& h : heads_) h.assign(size_, {});
    }
    shared_board(const shared_board&) = delete;
    shared_board& operator=(const shared_board&) = delete;

    // Every rank's slot of one call, read-only.
    template <class T>
    class parts {
    public:
        const T& operator[](std::size_t rank) const { return cells_[rank].value; }
        std::size_t size() const noexcept { return cells_.size(); }

    private:
        friend shared_board;
        struct cell {
            T value{};  // one object per rank, never a vector<bool>'s shared word
        };
        explicit parts(std::vector<cell>& c) : cells_(c) {}
        std::vector<cell>& cells_;
    };

    // Rank `rank`'s part of its next meeting, a call of `collective`:
    // copies `value` into its slot if `contributes`, waits for every rank,
    // then returns read(parts), where parts[i] is rank i's slot (meaningful
    // only for contributing ranks). The parts stay valid until read
    // returns. A meeting of calls of different collectives (the ranks'
    // calls differ) throws usage_error at every rank, and revokes the
    // stream where the call is guarded (the calls may have drawn different
    // tags); values of different types, or different `args` (root, op),
    // throw agreed_error (revocation.hpp) at every rank, and the stream
    // goes on.
    template <class T, class Read>
    decltype(auto) meet(int rank, std::string_view collective, bool contributes, const T& value, Read&& read,
                        detail::call_args args = {}) {
        const std::size_t me = static_cast<std::size_t>(rank), set = meetings_[me]++ & 1u;
        auto& cells = slots<T>(set);
        if (contributes) cells[me].value = value;
        const head mine{&typeid(T), call_code(collective), args};
        auto& heads = heads_[set];
        heads[me] = mine;
        sync_.sync();
        check_failed();
        // One pass over the heads; only a difference takes the slow path,
        // which says what differs (and returns if nothing does: one type
        // may have two type_info objects).
        for (const head& h : heads)
            if (h != mine) [[unlikely]] {
                refuse_other<T>(heads, collective);
                break;
            }
        return read(static_cast<const parts<T>&>(parts<T>(cells)));
    }

private:
    // What each rank says of its part of a meeting.
    struct head {
        const std::type_info* type = nullptr;
        std::uint8_t call = 0;  // call_code (tag.hpp)
        detail::call_args args;
        bool operator==(const head&) const = default;
    };

    // Throws if the ranks' heads differ: another call (usage_error), or
    // another type or other arguments (agreed_error, the same words at every
    // rank).
    template <class T>
    [[gnu::cold, gnu::noinline]] static void refuse_other(const std::vector<head>& heads, std::string_view collective) {
        const std::uint8_t call = call_code(collective);
        for (std::size_t q = 0; q < heads.size(); ++q)
            if (heads[q].call != call)
                throw usage_error(std::string(collective) + ": rank " + std::to_string(q) +
                                  " met this call with a call of " + std::string(call_name(heads[q].call)) +
                                  ": " + std::string(same_calls_rule));
        for (const head& h : heads)
            if (*h.type != typeid(T))
                throw detail::agreed_error("a collective received a value of type " + csp::type_name(*h.type) +
                                           " where it expected " + csp::type_name<T>() +
                                           "; do all ranks pass the same type?");
        for (std::size_t q = 1; q < heads.size(); ++q)
            detail::refuse_other_args(collective, {}, heads[0].args, static_cast<int>(q), heads[q].args);
    }

public:
    // Every meeting now and later throws `error`; `resign` ranks are gone.
    void fail(std::exception_ptr error, std::size_t resign) {
        {
            std::lock_guard lk(lock_);
            if (!failed_) failed_ = error;
            has_failed_.store(true, std::memory_order_release);
        }
        for (std::size_t i = 0; i < resign && sync_.enrolled() > 0; ++i) sync_.resign();
    }

private:
    struct slots_base {
        virtual ~slots_base() = default;
    };
    template <class T>
    struct typed_slots final : slots_base {
        using cell = typename parts<T>::cell;
        explicit typed_slots(std::size_t n) : sets{std::vector<cell>(n), std::vector<cell>(n)} {}
        std::vector<cell> sets[2];
    };

    // A small number per type a board has ever carried, the same in every
    // board of the program: its index into fast_.
    static std::size_t next_type_number() noexcept {
        static std::atomic<std::size_t> n{0};
        return n.fetch_add(1, std::memory_order_relaxed);
    }
    template <class T>
    static std::size_t type_number() noexcept {
        static const std::size_t k = next_type_number();
        return k;
    }

    // The slots for T. A type's slots are made once, under lock_, and never
    // move or go away while the board lives, so after the first meeting
    // with a type (of the first few types) every rank finds them with one
    // load, without the lock.
    template <class T>
    std::vector<typename parts<T>::cell>& slots(std::size_t set) {
        if (has_failed_.load(std::memory_order_acquire)) check_failed();
        const std::size_t k = type_number<T>();
        if (k < fast_.size())
            if (slots_base* s = fast_[k].load(std::memory_order_acquire))
                return static_cast<typed_slots<T>&>(*s).sets[set];
        std::lock_guard lk(lock_);
        if (failed_) std::rethrow_exception(failed_);
        auto& s = by_type_[std::type_index(typeid(T))];
        if (!s) {
            s = std::make_unique<typed_slots<T>>(size_);
            if (k < fast_.size()) fast_[k].store(s.get(), std::memory_order_release);
        }
        return static_cast<typed_slots<T>&>(*s).sets[set];
    }

    // After the barrier: a lock only once the board has failed.
    void check_failed() {
        if (!has_failed_.load(std::memory_order_acquire)) return;
        std::lock_guard lk(lock_);
        std::rethrow_exception(failed_);
    }

    std::size_t size_;
    csp::barrier sync_;
    std::mutex lock_;  // by_type_ and failed_
    std::unordered_map<std::type_index, std::unique_ptr<slots_base>> by_type_;  // owns every type's slots
    std::array<std::atomic<slots_base*>, 16> fast_{};  // by type_number(), once made
    std::vector<head> heads_[2];                    // each rank's head, per set
    std::vector<std::uint64_t> meetings_;           // per rank, written by that rank only
    std::exception_ptr failed_;
    std::atomic<bool> has_failed_{false};  // failed_ is set
};

namespace detail {

// The board of `comm` for stream `s`, or null if its ranks do not share
// memory (or are being recorded): what the shared_memory algorithms ask
// before they choose between the board and their fallback.
template <class C, class Stream>
shared_board* board_of(C& comm, Stream s) {
    if constexpr (requires { comm.board(s); }) return comm.board(s);
    else return nullptr;
}

// Whether `comm` has boards now (what the selection table asks).
template <class C>
bool shares_memory(const C& comm) {
    if constexpr (requires { comm.shares_memory(); }) return comm.shares_memory();
    else return false;
}

}  // namespace detail
}  // namespace csp::collectives
