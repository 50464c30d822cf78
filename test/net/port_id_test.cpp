// How messages name a port: small ids in decimal, the library's four-letter
// tags in hex with their letters.
#include <gtest/gtest.h>

#include "net/port_id.hpp"

using csp::net::port_text;

TEST(port_text, a_small_id_reads_in_decimal) {
    EXPECT_EQ(port_text(0), "port 0");
    EXPECT_EQ(port_text(7), "port 7");
    EXPECT_EQ(port_text(65535), "port 65535");
}

// Regression: the collectives' port was named "port 1129270348" in errors
// and in the deadlock report, which no reader connects with "COLL".
TEST(port_text, a_library_tag_reads_in_hex_with_its_letters) {
    EXPECT_EQ(port_text(0x434f4c4c), "port 0x434f4c4c (\"COLL\")");
    EXPECT_EQ(port_text(65536), "port 0x00010000");
}

TEST(port_text, a_large_id_with_unprintable_bytes_reads_in_hex_alone) {
    EXPECT_EQ(port_text(0x48594200), "port 0x48594200");  // "HYB" and a rank's index
    EXPECT_EQ(port_text(0xffffffff), "port 0xffffffff");
}
