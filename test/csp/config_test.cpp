// The configuration convention (csp/config.hpp): invalid values name the
// variable and what it accepts; defaults never read the environment; the
// README's table lists exactly the variables of the header's table, and the
// header's table exactly the variables the libraries and tools name.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "csp/config.hpp"

namespace {

struct scoped_env {
    scoped_env(const char* n, const char* v) : name(n) { ::setenv(n, v, 1); }
    ~scoped_env() { ::unsetenv(name); }
    const char* name;
};

std::string error_of(auto&& f) {
    try {
        f();
    } catch (const csp::usage_error& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace

TEST(config, an_invalid_choice_names_the_variable_and_the_accepted_values) {
    scoped_env e("CSP_TEST_CHOICE", "kqueue");
    const auto what = error_of([] { csp::config::choice("CSP_TEST_CHOICE", {"poll", "epoll"}); });
    EXPECT_NE(what.find("CSP_TEST_CHOICE=\"kqueue\""), std::string::npos) << what;
    EXPECT_NE(what.find("\"poll\" or \"epoll\""), std::string::npos) << what;
}

TEST(config, an_invalid_number_names_the_variable_and_the_range) {
    scoped_env e("CSP_TEST_NUMBER", "12x");
    const auto what = error_of([] { csp::config::number("CSP_TEST_NUMBER", 0, 100); });
    EXPECT_NE(what.find("CSP_TEST_NUMBER=\"12x\""), std::string::npos) << what;
    EXPECT_NE(what.find("from 0 to 100"), std::string::npos) << what;
    scoped_env f("CSP_TEST_NUMBER", "101");
    EXPECT_THROW(csp::config::number("CSP_TEST_NUMBER", 0, 100), csp::usage_error);
}

TEST(config, unset_and_empty_mean_the_default) {
    ::unsetenv("CSP_TEST_UNSET");
    EXPECT_FALSE(csp::config::number("CSP_TEST_UNSET", 0, 1).has_value());
    scoped_env e("CSP_TEST_UNSET", "");
    EXPECT_FALSE(csp::config::choice("CSP_TEST_UNSET", {"a"}).has_value());
    scoped_env g("CSP_TEST_UNSET", "7");
    EXPECT_EQ(csp::config::number("CSP_TEST_UNSET", 0, 10), 7);
}

TEST(config, the_readme_table_lists_exactly_the_variables_of_the_header) {
    std::ifstream readme(CSP_SOURCE_DIR "/README.md");
    ASSERT_TRUE(readme) << "cannot read README.md";
    std::stringstream text;
    text << readme.rdbuf();
    // Rows of the README's configuration table: "| `CSP_NAME` | ...".
    std::set<std::string> documented;
    const std::regex row(R"(\n\| `(CSP_[A-Z_]+)` \|)");
    const std::string s = text.str();
    for (auto it = std::sregex_iterator(s.begin(), s.end(), row); it != std::sregex_iterator(); ++it)
        documented.insert((*it)[1]);
    std::set<std::string> declared;
    for (const auto& v : csp::config::variables) declared.insert(std::string(v.name));
    EXPECT_EQ(documented, declared);
}

// Every "CSP_..." the libraries and tools spell in their sources is in the
// table, and every variable of the table is spelled somewhere besides it: a
// variable added to the code without a row (or a row left for a variable no
// longer read) fails here, not in a user's surprise.
TEST(config, the_header_table_lists_exactly_the_variables_the_sources_name) {
    namespace fs = std::filesystem;
    const fs::path root = CSP_SOURCE_DIR;
    const std::regex literal(R"re("(CSP_[A-Z0-9_]+)")re");
    std::set<std::string> named;
    std::size_t files = 0;
    for (const char* part : {"csp", "iosched", "net", "collectives", "dataflow", "tools"}) {
        for (const auto& entry : fs::recursive_directory_iterator(root / part)) {
            const auto ext = entry.path().extension();
            if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".hpp")) continue;
            if (entry.path() == root / "csp" / "config.hpp") continue;
            std::ifstream in(entry.path());
            std::stringstream text;
            text << in.rdbuf();
            const std::string s = text.str();
            for (auto it = std::sregex_iterator(s.begin(), s.end(), literal); it != std::sregex_iterator(); ++it)
                named.insert((*it)[1]);
            ++files;
        }
    }
    ASSERT_GT(files, 50u) << "the source tree was not found under " << root;
    std::set<std::string> declared;
    for (const auto& v : csp::config::variables) declared.insert(std::string(v.name));
    EXPECT_EQ(named, declared);
}
