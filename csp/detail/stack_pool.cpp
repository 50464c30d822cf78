#include "csp/detail/stack_pool.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
}  // namespace

stack_pool::stack_pool(std::size_t stack_size, bool guard)
    : guarded_(guard && round_to_alignment(stack_size) >= stack_guard::min_guarded_stack),
      size_(guarded_ ? round_to_pages(stack_size) : round_to_alignment(stack_size)),
      stride_(guarded_ ? size_ + stack_guard::page_size() : size_) {}

stack_pool::~stack_pool() {
    for (auto [base, len] : regions_) {
        if (guarded_) stack_guard::remove_region(base);
        ::munmap(base, len);
    }
    stack_guard::release(guards_);
}

boost::context::stack_context stack_pool::allocate() {
    std::lock_guard lk(mutex_);
    boost::context::stack_context sc;
    sc.size = size_;
    if (free_ != nullptr) {
        sc.sp = free_;
        free_ = *free_link(free_);
        *canary_of(sc.sp) = canary;
        return sc;
    }
    if (next_ == end_) {
        // Regions grow with demand: 16 stacks at first, at most 4096 at once.
        const std::size_t count = std::clamp<std::size_t>(carved_, 16, 4096);
        const std::size_t len = count * stride_;
        void* base = ::mmap(nullptr, len, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (base == MAP_FAILED) throw std::bad_alloc();
        regions_.emplace_back(base, len);
        if (guarded_) stack_guard::add_region(base, len, stride_);
        next_ = static_cast<char*>(base);
        end_ = next_ + len;
    }
    if (guarded_ && stack_guard::protect(next_)) ++guards_;
    next_ += stride_;
    ++carved_;
    sc.sp = next_;  // stacks grow down: sp is the top
    *canary_of(sc.sp) = canary;
    return sc;
}

void stack_pool::deallocate(boost::context::stack_context& sc) noexcept {
#if defined(__SANITIZE_ADDRESS__)
    // A fiber ends by switching away, never returning from its outermost
    // frames, so AddressSanitizer's redzones for them stay poisoned. Clear
    // them before the stack is reused.
    ASAN_UNPOISON_MEMORY_REGION(static_cast<char*>(sc.sp) - sc.size, sc.size);
#endif
    if (*canary_of(sc.sp) != canary) [[unlikely]] {
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
}

}  // namespace csp::detail
