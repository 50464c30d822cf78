#pragma once
// Types named as a reader writes them: "std::vector<float>", never
// "St6vectorIfSaIfEE". Every error message that names a type uses these.
#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <typeinfo>

namespace csp {

// (type_name.cpp)
std::string demangle(const char* abi_name);

inline std::string type_name(const std::type_info& t) { return demangle(t.name()); }

template <class T>
std::string type_name() {
    return demangle(typeid(T).name());
}

}  // namespace csp
