#include "csp/type_name.hpp"

namespace csp {

std::string demangle(const char* abi_name) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> s(abi::__cxa_demangle(abi_name, nullptr, nullptr, &status), std::free);
    return status == 0 && s ? std::string(s.get()) : std::string(abi_name);
}

}  // namespace csp
