#pragma once
// "farm.cpp:40": where a channel or process was made, for reports. Default
// names point at the code (std::source_location, captured by the making call
// as a default argument, so nothing is paid on any later operation).
#include <source_location>
#include <string>
#include <string_view>

namespace csp::detail {

inline std::string source_place(const std::source_location& at) {
    std::string_view file = at.file_name();
    if (const auto slash = file.find_last_of('/'); slash != std::string_view::npos) file.remove_prefix(slash + 1);
    return std::string(file) + ":" + std::to_string(at.line());
}

}  // namespace csp::detail
