#include "csp/detail/exception_state.hpp"

#include <cstring>

#include <cxxabi.h>

#if defined(__ARM_EABI_UNWINDER__)
#error "exception_state.hpp assumes the Itanium C++ ABI's __cxa_eh_globals without ARM EHABI's third field"
#endif

namespace csp::detail {

void* exception_state::locate() noexcept { return abi::__cxa_get_globals(); }

void exception_state::clear(void* here) noexcept {
    const globals empty{nullptr, 0};
    std::memcpy(here, &empty, sizeof empty);
}

[[gnu::noinline]] void exception_state::put_back(globals g) noexcept {
    std::memcpy(abi::__cxa_get_globals(), &g, sizeof g);
}

bool exception_state::thread_is_clear() noexcept {
    globals g;
    std::memcpy(&g, abi::__cxa_get_globals(), sizeof g);
    return g.caught == nullptr && g.uncaught == 0;
}

}  // namespace csp::detail
