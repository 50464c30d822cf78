// Types in error messages read as they are written in a program.
#include <gtest/gtest.h>

#include <array>
#include <map>
#include <memory_resource>
#include <string>
#include <vector>

#include "csp/type_name.hpp"

namespace {

template <int N>
struct sized {};

// The demangler's "std::vector<float, std::allocator<float> >" in a type
// error over the network read like a different type from the one the
// program named.
TEST(type_name, default_allocators_and_literal_suffixes_are_left_out) {
    EXPECT_EQ(csp::type_name<std::vector<float>>(), "std::vector<float>");
    EXPECT_EQ(csp::type_name<std::vector<std::vector<int>>>(), "std::vector<std::vector<int>>");
    EXPECT_EQ((csp::type_name<std::array<float, 4>>()), "std::array<float, 4>");
    EXPECT_EQ(csp::type_name<std::string>(), "std::string");
    EXPECT_EQ(csp::type_name<std::vector<std::string>>(), "std::vector<std::string>");
    EXPECT_EQ((csp::type_name<std::map<int, std::string>>()), "std::map<int, std::string, std::less<int>>");
    EXPECT_EQ(csp::type_name<sized<-3>>(), "(anonymous namespace)::sized<-3>");
    EXPECT_EQ(csp::type_name<double>(), "double");
}

TEST(type_name, another_allocator_stays_part_of_the_name) {
    EXPECT_EQ(csp::type_name<std::pmr::vector<double>>(),
              "std::vector<double, std::pmr::polymorphic_allocator<double>>");
}

}  // namespace
