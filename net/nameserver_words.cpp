#include "net/nameserver_words.hpp"

#include <cctype>

namespace csp::net::detail {

std::vector<std::string> split_words(const std::string& line) {
    std::vector<std::string> words;
    std::size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && line[i] == ' ') ++i;
        const std::size_t j = line.find(' ', i);
        if (i < line.size()) words.push_back(line.substr(i, j == std::string::npos ? std::string::npos : j - i));
        i = j == std::string::npos ? line.size() : j;
    }
    return words;
}

bool valid_job_name(const std::string& job) {
    if (job.empty() || job.size() > 200) return false;
    for (char c : job)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) return false;
    return true;
}

}  // namespace csp::net::detail
