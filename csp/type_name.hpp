#pragma once
// Types named as a reader writes them: "std::vector<float>", never
// "St6vectorIfSaIfEE". Every error message that names a type uses these.
#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <typeinfo>

namespace csp {

inline std::string demangle(const char* abi_name) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> s(abi::__cxa_demangle(abi_name, nullptr, nullptr, &status), std::free);
    return status == 0 && s ? std::string(s.get()) : std::string(abi_name);
}

inline std::string type_name(const std::type_info& t) { return demangle(t.name()); }

template <class T>
std::string type_name() {
    return demangle(typeid(T).name());
}

}  // namespace csp
