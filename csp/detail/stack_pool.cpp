#include "csp/detail/stack_pool.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <new>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

namespace csp::detail {

namespace {
std::size_t round_to_pages(std::size_t n) {
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    return (std::max(n, page) + page - 1) / page * page;
}
}  // namespace

stack_pool::stack_pool(std::size_t stack_size) : size_(round_to_pages(stack_size)) {}

stack_pool::~stack_pool() {
    for (auto [base, len] : regions_) ::munmap(base, len);
}

boost::context::stack_context stack_pool::allocate() {
    std::lock_guard lk(mutex_);
    boost::context::stack_context sc;
    sc.size = size_;
    if (!free_.empty()) {
        sc.sp = free_.back();
        free_.pop_back();
        return sc;
    }
    if (next_ == end_) {
        // Regions grow with demand: 16 stacks at first, at most 4096 at once.
        const std::size_t count = std::clamp<std::size_t>(carved_, 16, 4096);
        const std::size_t len = count * size_;
        void* base = ::mmap(nullptr, len, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (base == MAP_FAILED) throw std::bad_alloc();
        regions_.emplace_back(base, len);
        next_ = static_cast<char*>(base);
        end_ = next_ + len;
    }
    next_ += size_;
    ++carved_;
    sc.sp = next_;  // stacks grow down: sp is the top
    return sc;
}

void stack_pool::deallocate(boost::context::stack_context& sc) noexcept {
#if defined(__SANITIZE_ADDRESS__)
    // A fiber ends by switching away, never returning from its outermost
    // frames, so AddressSanitizer's redzones for them stay poisoned. Clear
    // them before the stack is reused.
    ASAN_UNPOISON_MEMORY_REGION(static_cast<char*>(sc.sp) - sc.size, sc.size);
#endif
    std::lock_guard lk(mutex_);
    try {
        free_.push_back(sc.sp);
    } catch (...) {
        // Out of memory for the free list: the stack stays reserved until the
        // pool goes; nothing else is lost.
    }
}

}  // namespace csp::detail
