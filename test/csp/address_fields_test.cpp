// Which structs carry an address in their bytes (csp/address_fields.hpp):
// pointers, views and references, found through nested aggregates, arrays,
// bases and bit-fields; let through where the fields cannot be seen, or
// where the type is declared so.
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "csp/address_fields.hpp"

namespace {

struct plain { double x; int n; };
struct slice { double* first; std::size_t count; };
struct pointer_last { std::size_t count; const double* first; };
struct inner_pointer { int a; double* p; };
struct outer { inner_pointer in; int n; };
struct outer_plain { plain in; int n; double xs[3]; };
struct array_of_pointers { int a; double* ps[2]; };
struct holds_span { int a; std::span<double> s; };
struct holds_string_view { std::string_view s; };
struct nothing {};
struct empty_then_pointer { nothing e; int x; double* p; };
struct empty_then_plain { nothing e; int x; };
struct pointer_base { double* p; };
struct derived_from_pointer : pointer_base { int x; };
struct derived_from_plain : plain { int y; };
struct bit_fields_then_pointer { int a : 3; int b : 5; char* c; };
struct bit_fields { int a : 3; int b : 5; };
struct member_pointer { int plain::* m; };
struct function_pointer { void (*f)(); };
struct const_fields { const int a; const double b; };
struct structs_then_slice { plain ps[4]; slice s[1]; };
struct pointer_with_default { int a = 3; double* p = nullptr; };
struct long_then_pointer { double a[600]; double* p; };
struct too_many_fields { double a[2000]; double* p; };
class hidden_pointer {
    double* p_ = nullptr;

public:
    int x = 0;
};
// A reference field is trivially copyable: its bytes are the referent's address.
struct reference_first { double& r; int n; };
struct const_reference_last { int n; const double& r; };
struct reference_to_vector { std::vector<double>& row; std::size_t first; };
struct nested_reference { int a; reference_first in; };
struct const_reference_to_aggregate { int a; const plain& p; };
struct three_references { int& a; int& b; const int& c; };
struct const_nested { const plain p; int x; };
struct rvalue_reference { double&& r; };
struct cookie { void* token; };
struct holds_cookie { cookie c; int x; };

}  // namespace

template <> struct csp::sent_as_bytes<cookie> : std::true_type {};

using csp::holds_address_v;

TEST(address_fields, a_pointer_field_is_found_wherever_it_sits_in_an_aggregate) {
    EXPECT_TRUE(holds_address_v<slice>);
    EXPECT_TRUE(holds_address_v<pointer_last>);
    EXPECT_TRUE(holds_address_v<outer>);                    // inside a nested aggregate
    EXPECT_TRUE(holds_address_v<array_of_pointers>);        // in an array
    EXPECT_TRUE(holds_address_v<empty_then_pointer>);       // after an empty member
    EXPECT_TRUE(holds_address_v<derived_from_pointer>);     // in a base
    EXPECT_TRUE(holds_address_v<bit_fields_then_pointer>);  // after bit-fields
    EXPECT_TRUE(holds_address_v<structs_then_slice>);       // in an array of aggregates
    EXPECT_TRUE(holds_address_v<pointer_with_default>);
    EXPECT_TRUE(holds_address_v<long_then_pointer>);        // after 600 array elements
    EXPECT_TRUE(holds_address_v<member_pointer>);
    EXPECT_TRUE(holds_address_v<function_pointer>);
}

TEST(address_fields, a_view_field_is_an_address_too) {
    EXPECT_TRUE(holds_address_v<holds_span>);
    EXPECT_TRUE(holds_address_v<holds_string_view>);
    EXPECT_TRUE(holds_address_v<std::span<const double>>);
}

TEST(address_fields, a_reference_field_was_let_through_as_plain_data) {
    static_assert(std::is_trivially_copyable_v<reference_first>);
    EXPECT_TRUE(holds_address_v<reference_first>);
    EXPECT_TRUE(holds_address_v<const_reference_last>);          // found only once the count starts past it
    EXPECT_TRUE(holds_address_v<reference_to_vector>);
    EXPECT_TRUE(holds_address_v<nested_reference>);              // inside a nested aggregate
    EXPECT_TRUE(holds_address_v<const_reference_to_aggregate>);  // bound whole, not descended into
    EXPECT_TRUE(holds_address_v<three_references>);              // no count below 3 is well-formed
    EXPECT_TRUE((holds_address_v<std::pair<int, const double&>>));
    EXPECT_TRUE((holds_address_v<std::tuple<int, double&>>));
    EXPECT_FALSE(holds_address_v<const_nested>);                 // a const value is a value
}

TEST(address_fields, standard_wrappers_are_looked_through) {
    EXPECT_TRUE((holds_address_v<std::array<slice, 100000>>));
    EXPECT_FALSE((holds_address_v<std::array<double, 100000>>));
    EXPECT_TRUE(holds_address_v<std::optional<slice>>);
    EXPECT_FALSE(holds_address_v<std::optional<plain>>);
    EXPECT_TRUE((holds_address_v<std::pair<int, int*>>));
    EXPECT_TRUE((holds_address_v<std::tuple<int, plain, slice>>));
    EXPECT_FALSE((holds_address_v<std::tuple<int, plain>>));
    EXPECT_TRUE(holds_address_v<slice[4]>);
}

TEST(address_fields, plain_data_carries_no_address) {
    EXPECT_FALSE(holds_address_v<int>);
    EXPECT_FALSE(holds_address_v<double>);
    EXPECT_FALSE(holds_address_v<plain>);
    EXPECT_FALSE(holds_address_v<outer_plain>);
    EXPECT_FALSE(holds_address_v<empty_then_plain>);
    EXPECT_FALSE(holds_address_v<derived_from_plain>);
    EXPECT_FALSE(holds_address_v<bit_fields>);
    EXPECT_FALSE(holds_address_v<const_fields>);
    EXPECT_FALSE(holds_address_v<nothing>);
}

TEST(address_fields, what_cannot_be_seen_or_is_declared_bytes_is_let_through) {
    EXPECT_FALSE(holds_address_v<hidden_pointer>);  // not an aggregate: its fields are hidden
    EXPECT_FALSE(holds_address_v<too_many_fields>); // more fields than are examined
    EXPECT_FALSE(holds_address_v<cookie>);          // declared sent_as_bytes
    EXPECT_FALSE(holds_address_v<holds_cookie>);    // ... also as a field
    EXPECT_FALSE(holds_address_v<rvalue_reference>); // an rvalue reference binds like a value
    EXPECT_TRUE(holds_address_v<int*>);             // a pointer itself is one
}
