#include "csp/type_name.hpp"

#include <cctype>
#include <string_view>

namespace csp {

namespace {

// The index just past the '>' that closes the '<' at `open`, or npos.
std::size_t past_closing(const std::string& s, std::size_t open) {
    int depth = 0;
    for (std::size_t i = open; i < s.size(); ++i) {
        if (s[i] == '<') ++depth;
        else if (s[i] == '>' && --depth == 0) return i + 1;
    }
    return std::string::npos;
}

bool identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The demangler spells every default argument and literal suffix:
// "std::vector<float, std::allocator<float> >", "std::array<float, 4ul>".
// A reader writes "std::vector<float>" and "std::array<float, 4>"; other
// allocators (std::pmr's) stay, since they make another type.
std::string as_written(std::string s) {
    for (const std::string_view string_type :
         {"std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >",
          "std::basic_string<char, std::char_traits<char>, std::allocator<char> >"})
        for (std::size_t at; (at = s.find(string_type)) != std::string::npos;)
            s.replace(at, string_type.size(), "std::string");
    constexpr std::string_view allocator = ", std::allocator<";
    for (std::size_t at; (at = s.find(allocator)) != std::string::npos;) {
        const std::size_t end = past_closing(s, at + allocator.size() - 1);
        if (end == std::string::npos) break;
        s.erase(at, end - at);
    }
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        // "> >" -> ">>", and the space an erased allocator left: "int >"
        if (s[i] == ' ' && i + 1 < s.size() && s[i + 1] == '>') continue;
        // A number's suffix (4ul, 2u, 3l): digits that start a template
        // argument, followed by u/l letters that end it.
        if (std::isdigit(static_cast<unsigned char>(s[i])) && (out.empty() || !identifier_char(out.back()))) {
            std::size_t j = i;
            while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
            std::size_t k = j;
            while (k < s.size() && (s[k] == 'u' || s[k] == 'l')) ++k;
            if (k > j && k < s.size() && (s[k] == '>' || s[k] == ',')) {
                out.append(s, i, j - i);
                i = k - 1;
                continue;
            }
        }
        out += s[i];
    }
    return out;
}

}  // namespace

std::string demangle(const char* abi_name) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> s(abi::__cxa_demangle(abi_name, nullptr, nullptr, &status), std::free);
    return status == 0 && s ? as_written(s.get()) : std::string(abi_name);
}

}  // namespace csp
