#include "csp/detail/stack_pool.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <new>

#include "csp/detail/stack_guard.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

namespace csp::detail {

namespace {
// Stacks need 16-byte alignment, not page alignment: stacks smaller than a
// page share pages with their neighbours, which is what makes tiny processes
// cheap. Below 2 KiB not even Boost's context record and one frame fit.
constexpr std::size_t min_stack = 2048;
std::size_t round_to_alignment(std::size_t n) { return (std::max(n, min_stack) + 15) / 16 * 16; }
std::size_t round_to_pages(std::size_t n) {
    const std::size_t page = stack_guard::page_size();
    return (n + page - 1) / page * page;
}

bool guarded_shape(std::size_t stack_size, bool guard) {
    return guard && round_to_alignment(stack_size) >= stack_guard::min_guarded_stack;
}
std::size_t size_of_shape(std::size_t stack_size, bool guarded) {
    return guarded ? round_to_pages(stack_size) : round_to_alignment(stack_size);
}

// What a shelved pool keeps in memory of each stack, from its top.
constexpr std::uintptr_t kept_warm = 8 * 1024;

// The shelf (stack_pool::shelve): pools oldest first. Never destroyed, so a
// runtime ending while the program exits still finds it.
constexpr std::size_t shelf_stacks = 4096;
std::mutex shelf_mutex;
std::vector<std::shared_ptr<stack_pool>>& shelf() {
    static auto* pools = new std::vector<std::shared_ptr<stack_pool>>;
    return *pools;
}
}  // namespace

stack_pool::stack_pool(std::size_t stack_size, bool guard)
    : canaries_(!guarded_shape(stack_size, guard)),
      guarded_(guarded_shape(stack_size, guard)),
      size_(size_of_shape(stack_size, guarded_)),
      stride_(guarded_ ? size_ + stack_guard::page_size() : size_) {}

stack_pool::~stack_pool() {
    for (const region& r : regions_) {
        if (guarded_) stack_guard::remove_region(r.base);
        ::munmap(r.base, r.slots * stride_);
    }
    stack_guard::release(guards_);
}

std::shared_ptr<stack_pool> stack_pool::for_runtime(std::size_t stack_size, bool guard) {
    const bool guarded = guarded_shape(stack_size, guard);
    const std::size_t size = size_of_shape(stack_size, guarded);
    {
        std::lock_guard lk(shelf_mutex);
        auto& pools = shelf();
        for (auto it = pools.rbegin(); it != pools.rend(); ++it) {
            if ((*it)->guarded_ != guarded || (*it)->size_ != size) continue;
            std::shared_ptr<stack_pool> pool = std::move(*it);
            pools.erase(std::next(it).base());
            return pool;
        }
    }
    return std::make_shared<stack_pool>(stack_size, guard);
}

void stack_pool::shelve(std::shared_ptr<stack_pool> pool) noexcept {
    if (!pool || pool.use_count() != 1) return;
    const std::size_t stacks = pool->capacity();
    if (stacks > shelf_stacks || !pool->trim()) return;
    std::lock_guard lk(shelf_mutex);
    auto& pools = shelf();
    std::size_t held = stacks;
    for (const auto& p : pools) held += p->capacity();
    auto oldest = pools.begin();
    for (; oldest != pools.end() && held > shelf_stacks; ++oldest) held -= (*oldest)->capacity();
    pools.erase(pools.begin(), oldest);  // unmapped here: no pool lock is taken under the shelf's but capacity()'s
    try {
        pools.push_back(std::move(pool));
    } catch (...) {  // no room for the pointer: the pool goes
    }
}

std::size_t stack_pool::capacity() const noexcept {
    std::lock_guard lk(mutex_);
    return slots();
}

std::size_t stack_pool::slots() const noexcept {
    std::size_t n = 0;
    for (const region& r : regions_) n += r.slots;
    return n;
}

void stack_pool::clear_shelf() noexcept {
    std::lock_guard lk(shelf_mutex);
    shelf().clear();
}

bool stack_pool::trim() noexcept {
    std::lock_guard lk(mutex_);
    if (out_ != 0 || watching_.load(std::memory_order_relaxed)) return false;
    const std::uintptr_t page = stack_guard::page_size();
    std::vector<unsigned char> resident;
    for (const region& r : regions_) {
        if (r.carved == 0) continue;
        // Which pages are in memory: one call for the region, and one more
        // only for each run of pages a stack wrote deep.
        const std::size_t length = r.carved * stride_;
        try {
            resident.assign((length + page - 1) / page, 0);
        } catch (...) {
            return false;
        }
        if (::mincore(r.base, length, resident.data()) != 0) return false;
        const auto base = reinterpret_cast<std::uintptr_t>(r.base);
        for (std::size_t k = 0; k < r.carved; ++k) {
            const std::uintptr_t top = base + (k + 1) * stride_;
            const std::uintptr_t lo = (top - size_ + page - 1) / page * page;
            const std::uintptr_t hi = top - size_ < top - kept_warm ? (top - kept_warm) / page * page : lo;
            for (std::uintptr_t p = lo; p < hi;) {
                if ((resident[(p - base) / page] & 1) == 0) {
                    p += page;
                    continue;
                }
                std::uintptr_t end = p + page;
                while (end < hi && (resident[(end - base) / page] & 1) != 0) end += page;
                if (::madvise(reinterpret_cast<void*>(p), end - p, MADV_DONTNEED) != 0) return false;
                p = end;
            }
        }
    }
    return true;
}

boost::context::stack_context stack_pool::allocate() {
    std::lock_guard lk(mutex_);
    boost::context::stack_context sc;
    sc.size = size_;
    if (free_ != nullptr) {
        sc.sp = free_;
        free_ = *free_link(free_);
        if (canaries_.load(std::memory_order_relaxed)) *canary_of(sc.sp) = canary;
        ++out_;
        return sc;
    }
    if (regions_.empty() || regions_.back().carved == regions_.back().slots) {
        // Regions grow with demand: 16 stacks at first, at most 4096 at once.
        const std::size_t count = std::clamp<std::size_t>(slots(), 16, 4096);
        const std::size_t len = count * stride_;
        void* base = ::mmap(nullptr, len, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (base == MAP_FAILED) throw std::bad_alloc();
        try {
            regions_.push_back(region{static_cast<char*>(base), count});
        } catch (...) {
            ::munmap(base, len);
            throw;
        }
        if (guarded_) stack_guard::add_region(base, len, stride_);
    }
    region& r = regions_.back();
    char* const slot = r.base + r.carved * stride_;
    if (guarded_) {
        if (stack_guard::protect(slot)) ++guards_;
        else if (!canaries_.load(std::memory_order_relaxed)) start_canaries();
    }
    ++r.carved;
    ++out_;
    sc.sp = slot + stride_;  // stacks grow down: sp is the top
    if (canaries_.load(std::memory_order_relaxed)) *canary_of(sc.sp) = canary;
    return sc;
}

void stack_pool::start_canaries() noexcept {
    // Stacks given out now get theirs too, so that every stack that comes
    // back has one; writing the lowest word of a stack in use is harmless
    // unless its process overflowed it already.
    for (const region& r : regions_)
        for (std::size_t k = 0; k < r.carved; ++k) *canary_of(r.base + (k + 1) * stride_) = canary;
    canaries_.store(true, std::memory_order_release);
}

void stack_pool::deallocate(boost::context::stack_context& sc) noexcept {
#if defined(__SANITIZE_ADDRESS__)
    // A fiber ends by switching away, never returning from its outermost
    // frames, so AddressSanitizer's redzones for them stay poisoned. Clear
    // them before the stack is reused.
    ASAN_UNPOISON_MEMORY_REGION(static_cast<char*>(sc.sp) - sc.size, sc.size);
#endif
    if (canaries_.load(std::memory_order_acquire) && *canary_of(sc.sp) != canary) [[unlikely]] {
        // Not an exception: the neighbour's memory is already damaged.
        std::fprintf(stderr,
                     "csp: a process wrote past the bottom of its %zu-byte stack and may have corrupted "
                     "another process's memory; give it more with runtime_options::stack_size\n",
                     size_);
        std::abort();
    }
    if (watching_.load(std::memory_order_relaxed)) {
        unsigned char* const top = static_cast<unsigned char*>(sc.sp);
        unsigned char* const bottom = top - sc.size;
        const unsigned char* p = bottom + sizeof(canary);
        while (p < top && *p == 0) ++p;
        const auto depth = static_cast<std::size_t>(top - p);
        std::size_t seen = deepest_.load(std::memory_order_relaxed);
        while (depth > seen && !deepest_.compare_exchange_weak(seen, depth, std::memory_order_relaxed)) {
        }
        std::memset(bottom, 0, sc.size);
    }
    std::lock_guard lk(mutex_);
    *free_link(sc.sp) = free_;
    free_ = sc.sp;
    --out_;
}

}  // namespace csp::detail
