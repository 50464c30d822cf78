#include "collectives/host_board.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <thread>
#include <utility>

#include "csp/timer.hpp"
#include "net/errors.hpp"

namespace csp::collectives {

namespace {

constexpr std::size_t line = 64;

// How long a wait spins before it sleeps: a meeting of ranks that call the
// collective together completes well within it, even with several ranks
// per core; a rank that is late by more than this is waited for asleep.
// A host group's leader (hierarchy.hpp) comes to each meeting late by its
// network step: 8 ranks on 2 cores as 2 hosts of 4 (bench/collectives_rank
// hosts 4, three alternating runs, 2026-11-29), a two-level allreduce of
// 64 KiB took 217 us with this spin and 472 with one of 100 us, which put a
// host's other ranks to sleep (and the leader to waking them) in most
// calls; of 1 MiB 2,252 against 1,468; the flat collectives read the same.
constexpr std::chrono::microseconds spin_for{400};
// The same on a large board, where each rank copies up to a part in and
// out between meetings, so ranks that share a core wait longer for each
// other: 8 ranks on 2 cores, allreduce of 1 MiB over UCX
// (bench/collectives_rank, six runs each, 2026-11-29, a noisy machine):
// median 1,430 us (771-3,420) with the spin above, 1,045 (742-1,943) with
// this one.
constexpr std::chrono::microseconds large_spin_for{1000};
// How much of that a rank that has a core of its own keeps it before it
// lets other programs run between looks (at once when oversubscribed).
constexpr std::chrono::microseconds keep_core{5};
// Looks between two reads of the clock.
constexpr unsigned looks_per_clock_read = 8;

[[noreturn]] void fail(const std::string& what, const std::string& name) {
    throw net::net_error("host board: " + what + " of shared memory " + name + ": " + std::strerror(errno));
}

}  // namespace

// Written by rank q only, read by all: q's progress through the meetings.
struct alignas(line) host_board::control_line {
    std::uint64_t arrived_word;
    std::uint64_t sleeping_word;
    std::atomic_ref<std::uint64_t> arrived() noexcept { return std::atomic_ref<std::uint64_t>(arrived_word); }
    std::atomic_ref<std::uint64_t> sleeping() noexcept { return std::atomic_ref<std::uint64_t>(sleeping_word); }
};

// The head of one part; its bytes follow. Written by its rank before it
// arrives, read by all after the meeting completed.
struct alignas(line) host_board::part_head {
    std::uint32_t type;
    std::uint8_t fits;
    std::uint8_t call;
    std::uint32_t sequence;
    std::int32_t root;
    std::uint32_t op;
    std::uint64_t blocks;
    std::uint64_t bytes;
};

static_assert((host_board::part_capacity + line) % line == 0, "parts start on a cache line");

host_board::shape host_board::large_shape(int size) noexcept {
    constexpr std::size_t least = 64 * 1024, most = 256 * 1024;
    const std::size_t each = large_set_bytes / static_cast<std::size_t>(std::max(size, 1));
    return {std::clamp(each / line * line, least, most) - line, 3};
}

host_board::host_board(std::string name, bool owner, int size, int rank, bool oversubscribed, shape sh)
    : name_(std::move(name)), named_(owner), size_(size), rank_(rank), oversubscribed_(oversubscribed), shape_(sh) {
    if ((sh.part_capacity + line) % line != 0 || (sh.sets != 2 && sh.sets != 3))
        throw std::invalid_argument("host board: parts of " + std::to_string(sh.part_capacity) + " bytes in " +
                                    std::to_string(sh.sets) + " sets");
    length_ = static_cast<std::size_t>(size) * line +
              static_cast<std::size_t>(sh.sets) * static_cast<std::size_t>(size) * (line + sh.part_capacity);
}

host_board::host_board(host_board&& o) noexcept
    : name_(std::move(o.name_)), named_(std::exchange(o.named_, false)), size_(o.size_), rank_(o.rank_),
      oversubscribed_(o.oversubscribed_), shape_(o.shape_), base_(std::exchange(o.base_, nullptr)), length_(o.length_),
      meetings_(o.meetings_) {}

host_board::~host_board() {
    if (base_ != nullptr) ::munmap(base_, length_);
    unlink_name();
}

void host_board::unlink_name() {
    if (std::exchange(named_, false)) ::shm_unlink(name_.c_str());
}

host_board host_board::create(int size, int rank, bool oversubscribed, shape sh) {
    for (int attempt = 0;; ++attempt) {
        // A name nobody else is likely to hold (O_EXCL catches the rest).
        // getrandom, not std::random_device: that object is 5 KiB, and this
        // runs on a process's stack.
        std::uint64_t bits = 0;
        if (::getrandom(&bits, sizeof bits, 0) != static_cast<ssize_t>(sizeof bits))
            bits = (static_cast<std::uint64_t>(::getpid()) << 32) ^
                   static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
        char name[40];
        std::snprintf(name, sizeof name, "/csp-host-board-%016llx", static_cast<unsigned long long>(bits));
        const int fd = ::shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd < 0 && errno == EEXIST && attempt < 8) continue;
        if (fd < 0) fail("creating", name);
        host_board b(name, true, size, rank, oversubscribed, sh);
        if (::ftruncate(fd, static_cast<off_t>(b.length_)) != 0) {
            const int e = errno;
            ::close(fd);
            errno = e;
            fail("sizing", name);
        }
        if (sh != shape{}) {
            if (const int e = ::posix_fallocate(fd, 0, static_cast<off_t>(b.length_)); e != 0) {
                ::close(fd);
                errno = e;
                fail("allocating " + std::to_string(b.length_) + " bytes", name);
            }
        }
        b.map(fd);
        return b;
    }
}

host_board host_board::open(const std::string& name, int size, int rank, bool oversubscribed, shape sh) {
    const int fd = ::shm_open(name.c_str(), O_RDWR, 0600);
    if (fd < 0) fail("opening", name);
    host_board b(name, false, size, rank, oversubscribed, sh);
    struct stat st {};
    if (::fstat(fd, &st) != 0 || static_cast<std::size_t>(st.st_size) != b.length_) {
        ::close(fd);
        throw net::net_error("host board: shared memory " + name + " is not the size of a board for " +
                             std::to_string(size) + " ranks");
    }
    b.map(fd);
    return b;
}

void host_board::map(int fd) {
    void* p = ::mmap(nullptr, length_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    const int e = errno;
    ::close(fd);
    errno = e;
    if (p == MAP_FAILED) fail("mapping", name_);
    base_ = static_cast<std::byte*>(p);
}

host_board::control_line& host_board::control(int q) const noexcept {
    return *reinterpret_cast<control_line*>(base_ + static_cast<std::size_t>(q) * line);
}

host_board::part_head& host_board::head(std::uint64_t m, int q) const noexcept {
    const std::size_t set = m % static_cast<std::uint64_t>(shape_.sets);
    const std::size_t index = set * static_cast<std::size_t>(size_) + static_cast<std::size_t>(q);
    return *reinterpret_cast<part_head*>(base_ + static_cast<std::size_t>(size_) * line +
                                         index * (line + shape_.part_capacity));
}

std::uint64_t host_board::arrive(std::uint32_t type, std::span<const std::byte> bytes, tag call,
                                 detail::call_args args) {
    const std::uint64_t m = ++meetings_;
    part_head& h = head(m, rank_);
    h.type = type;
    h.call = call.call();
    h.sequence = call.sequence();
    h.root = args.root;
    h.op = args.op;
    h.blocks = args.blocks;
    h.bytes = bytes.size();
    h.fits = bytes.size() <= shape_.part_capacity ? 1 : 0;
    if (h.fits && !bytes.empty()) std::memcpy(reinterpret_cast<std::byte*>(&h) + line, bytes.data(), bytes.size());
    control(rank_).arrived().store(m);  // seq_cst: see the header's first invariant
    return m;
}

bool host_board::complete(std::uint64_t m) const noexcept {
    for (int q = 0; q < size_; ++q)
        if (control(q).arrived().load() < m) return false;
    return true;
}

bool host_board::spin(std::uint64_t m) const {
    const auto start = std::chrono::steady_clock::now();
    auto now = start;
    for (unsigned looks = 1;; ++looks) {
        if (complete(m)) return true;
        if (looks % looks_per_clock_read == 0) {
            now = std::chrono::steady_clock::now();
            if (now - start >= (shape_ == shape{} ? spin_for : large_spin_for)) return false;
        }
        // The node's other processes first (its UCX progress among them);
        // then, if none was ready, the host's other programs: with more
        // ranks than cores the rank being waited for may need this core.
        if (!csp::yield() && (oversubscribed_ || now - start >= keep_core)) std::this_thread::yield();
    }
}

bool host_board::sleep(std::uint64_t m) noexcept {
    auto flag = control(rank_).sleeping();
    flag.store(m);
    if (!complete(m)) return true;
    std::uint64_t expected = m;
    return !flag.compare_exchange_strong(expected, 0);  // lost: a waker's message is on the way
}

std::uint32_t host_board::fingerprint(std::string_view type_name) noexcept {
    const std::size_t h = std::hash<std::string_view>{}(type_name);
    return static_cast<std::uint32_t>(h ^ (h >> 32));
}

bool host_board::take_sleeper(std::uint64_t m, int q) noexcept {
    // A seq_cst load orders like the exchange's read (no wake is lost), and
    // leaves the line shared when q is not asleep: every rank looks at every
    // flag at every meeting, and nobody sleeps in most of them.
    auto flag = control(q).sleeping();
    std::uint64_t expected = m;
    return flag.load() == m && flag.compare_exchange_strong(expected, 0);
}

host_board::part host_board::part_of(std::uint64_t m, int q) const noexcept {
    const part_head& h = head(m, q);
    return {h.type,
            h.fits != 0,
            h.call,
            h.sequence,
            {h.root, h.op, h.blocks},
            h.bytes,
            reinterpret_cast<const std::byte*>(&h) + line};
}

std::byte* host_board::own_part(std::uint64_t m) noexcept {
    return reinterpret_cast<std::byte*>(&head(m, rank_)) + line;
}

}  // namespace csp::collectives
