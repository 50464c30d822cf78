#include "collectives/registry.hpp"

#include "collectives/aspen_reduce.hpp"

namespace csp::collectives {

std::string_view algorithm_name(std::string_view collective, std::uint8_t code) {
    if (collective == aspen_reduce_info.collective && code == aspen_reduce_info.code) return aspen_reduce_info.name;
    for (const auto& a : registry::every_algorithm)
        if (a.collective == collective && a.code == code) return a.name;
    return {};
}

}  // namespace csp::collectives
