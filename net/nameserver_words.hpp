#pragma once
// The words of the nameserver protocol (nameserver_protocol.hpp): pure
// functions, no IO, so a fuzzer can drive them alone.
#include <cstddef>
#include <string>
#include <vector>

namespace csp::net::detail {

// The longest request or answer line, without its newline.
inline constexpr std::size_t max_line = 1024;

// A line cut at spaces; runs of spaces separate like one.
std::vector<std::string> split_words(const std::string& line);

// 1-200 characters of [A-Za-z0-9._-].
bool valid_job_name(const std::string& job);

}  // namespace csp::net::detail
