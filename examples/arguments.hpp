#pragma once
// An example's numeric arguments: the whole argument must be a number in
// range, or the example stops and names it ("heat: the plate's size must be
// a whole number from 1, not '-5'"). std::stoul("-5") wraps to 2^64 - 5,
// and std::stol("1e6") reads 1 and drops the rest: neither is an error.
#include <errno.h>  // program_invocation_short_name

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace examples {

template <class T>
T number(std::string_view text, std::string_view what, T least = 0, T most = std::numeric_limits<T>::max()) {
    T value{};
    const char* const end = text.data() + text.size();
    const auto [stop, ec] = std::from_chars(text.data(), end, value);
    if (ec != std::errc{} || stop != end || value < least || value > most) {
        std::string range = "from " + std::to_string(least);
        if (most != std::numeric_limits<T>::max()) range += " to " + std::to_string(most);
        throw std::invalid_argument(std::string(what) + " must be a whole number " + range + ", not '" +
                                    std::string(text) + "'");
    }
    return value;
}

// Positional argument i, or `otherwise` when there are fewer.
template <class T>
T number_at(int argc, char** argv, int i, std::string_view what, T otherwise, T least = 0,
            T most = std::numeric_limits<T>::max()) {
    return i < argc ? number<T>(argv[i], what, least, most) : otherwise;
}

// Prints "usage: <program> <usage>" and ends the program with status 0.
[[noreturn]] inline void show_usage(std::string_view usage) {
    std::printf("usage: %s %.*s\n", program_invocation_short_name, static_cast<int>(usage.size()), usage.data());
    std::exit(0);
}

// Refuses more than `most` arguments (those left once the flags were
// taken): a misspelt flag or a stray word is an error, not ignored.
// --help or -h among them shows the usage instead.
inline void at_most(const std::vector<std::string>& args, std::size_t most, std::string_view usage) {
    for (const auto& a : args)
        if (a == "--help" || a == "-h") show_usage(usage);
    if (args.size() > most)
        throw std::invalid_argument("unexpected argument '" + args[most] + "' (arguments: " + std::string(usage) + ")");
}
inline void at_most(int argc, char** argv, int most, std::string_view usage) {
    at_most(std::vector<std::string>(argv + 1, argv + argc), static_cast<std::size_t>(most), usage);
}

}  // namespace examples
