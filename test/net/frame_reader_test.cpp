// The frame reader on byte strings: frames split at every byte boundary,
// several frames in one read, a payload larger than the read buffer read in
// place, payloads read into landings, and each protocol fault named, with
// what came before it kept.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <random>
#include <cstring>
#include <string>
#include <vector>

#include "csp/runtime.hpp"
#include "net/frame_reader.hpp"

namespace net = csp::net;

namespace {

constexpr int peer = 3;

std::vector<std::byte> frame(const net::header& h, const std::string& body = {}) {
    std::vector<std::byte> out(net::header::size + body.size());
    h.encode(out.data());
    std::memcpy(out.data() + net::header::size, body.data(), body.size());
    return out;
}
std::vector<std::byte> data(std::uint32_t port, std::uint64_t tag, const std::string& body, int from = peer) {
    return frame(
        net::header::data(static_cast<std::uint32_t>(from), port, tag, static_cast<std::uint32_t>(body.size())), body);
}
void append(std::vector<std::byte>& to, const std::vector<std::byte>& more) {
    to.insert(to.end(), more.begin(), more.end());
}

// Feeds `bytes` in reads of at most `chunk` bytes (and never more than the
// reader asks for); returns the messages.
std::vector<net::message> feed(net::frame_reader& r, const std::vector<std::byte>& bytes, std::size_t chunk) {
    std::vector<net::message> out;
    std::size_t at = 0;
    while (at < bytes.size()) {
        std::size_t room;
        std::byte* dst = r.space(room);
        const std::size_t n = std::min({room, chunk, bytes.size() - at});
        std::memcpy(dst, bytes.data() + at, n);
        at += n;
        r.arrived(n, out);
    }
    return out;
}

std::string text(const net::message& m) {
    return std::string(reinterpret_cast<const char*>(m.body.data()), m.body.size());
}

}  // namespace

TEST(frame_reader, frames_split_at_any_byte_arrive_whole_and_in_order) {
    std::vector<std::byte> stream;
    append(stream, data(1, 10, "alpha"));
    append(stream, data(2, 20, ""));
    append(stream, data(1, 30, std::string(100, 'x')));
    for (std::size_t chunk : {1u, 2u, 7u, 31u, 32u, 33u, 1000u}) {
        net::frame_reader r(1 << 20, peer);
        const auto got = feed(r, stream, chunk);
        ASSERT_EQ(got.size(), 3u) << "chunk " << chunk;
        EXPECT_EQ(got[0].port, 1u);
        EXPECT_EQ(got[0].tag, 10u);
        EXPECT_EQ(got[0].source, peer);
        EXPECT_EQ(text(got[0]), "alpha");
        EXPECT_EQ(got[1].size(), 0u);
        EXPECT_EQ(got[1].tag, 20u);
        EXPECT_EQ(text(got[2]), std::string(100, 'x'));
        EXPECT_EQ(r.unfinished(), "");
        EXPECT_FALSE(r.goodbye());
    }
}

TEST(frame_reader, many_frames_in_one_read_all_arrive) {
    std::vector<std::byte> stream;
    for (int i = 0; i < 500; ++i) append(stream, data(7, static_cast<std::uint64_t>(i), std::to_string(i)));
    net::frame_reader r(1 << 20, peer);
    const auto got = feed(r, stream, stream.size());
    ASSERT_EQ(got.size(), 500u);
    for (int i = 0; i < 500; ++i) {
        EXPECT_EQ(got[static_cast<std::size_t>(i)].tag, static_cast<std::uint64_t>(i));
        EXPECT_EQ(text(got[static_cast<std::size_t>(i)]), std::to_string(i));
    }
}

TEST(frame_reader, a_payload_larger_than_the_read_buffer_is_read_in_place) {
    std::string big(net::frame_reader::read_capacity * 2 + 13, '\0');
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 26);
    std::vector<std::byte> stream = data(4, 1, "before");
    append(stream, data(4, 2, big));
    append(stream, data(4, 3, "after"));
    net::frame_reader r(1 << 24, peer);
    const auto got = feed(r, stream, 64 * 1024);
    ASSERT_EQ(got.size(), 3u);
    EXPECT_EQ(text(got[0]), "before");
    EXPECT_EQ(text(got[1]), big);
    EXPECT_EQ(text(got[2]), "after");
}

TEST(frame_reader, goodbye_ends_the_stream_and_a_frame_after_it_is_a_fault) {
    std::vector<std::byte> stream = data(1, 1, "last");
    append(stream, frame(net::header::goodbye(peer)));
    net::frame_reader r(1 << 20, peer);
    EXPECT_EQ(feed(r, stream, 5).size(), 1u);
    EXPECT_TRUE(r.goodbye());
    std::vector<net::message> out;
    try {
        feed(r, data(1, 2, "late"), 100);
        FAIL() << "a data frame after goodbye was accepted";
    } catch (const net::frame_error& e) {
        EXPECT_NE(std::string(e.what()).find("after goodbye"), std::string::npos) << e.what();
    }
}

// A goodbye may carry the job's deadlock report (frame.hpp), up to
// max_farewell bytes, however the reads cut it; it is taken whole.
TEST(frame_reader, a_goodbye_carries_its_farewell_however_the_reads_cut_it) {
    for (const std::string& farewell :
         {std::string("deadlock in job 'j': ..."), std::string(net::header::max_farewell, 'r')}) {
        std::vector<std::byte> stream = data(1, 1, "last");
        append(stream, frame(net::header::goodbye(peer, static_cast<std::uint32_t>(farewell.size())), farewell));
        for (std::size_t chunk : {1u, 5u, 33u, 4096u, 1u << 20}) {
            net::frame_reader r(1 << 20, peer);
            EXPECT_EQ(feed(r, stream, chunk).size(), 1u);
            EXPECT_TRUE(r.goodbye()) << "chunk " << chunk;
            EXPECT_EQ(r.farewell(), farewell) << "chunk " << chunk;
            EXPECT_EQ(r.unfinished(), "");
        }
    }
    net::frame_reader plain(1 << 20, peer);
    feed(plain, frame(net::header::goodbye(peer)), 32);
    EXPECT_TRUE(plain.goodbye());
    EXPECT_EQ(plain.farewell(), "");
}

TEST(frame_reader, faults_are_named_and_what_came_before_is_kept) {
    struct fault {
        std::vector<std::byte> bytes;
        std::string says;
    };
    std::vector<std::byte> bad_magic = data(1, 1, "x");
    net::header goodbye_too_long = net::header::goodbye(peer, net::header::max_farewell + 1);
    bad_magic[0] = std::byte{0};
    const std::vector<fault> faults{
        {bad_magic, "bad magic"},
        {data(1, 1, "x", peer + 1), "claims to come from node 4"},
        {frame(net::header::hello(peer, 0)), "unexpected hello frame"},
        {frame(goodbye_too_long), "malformed goodbye frame with a payload of 65537 bytes (at most 65536)"},
        {data(1, 1, std::string(2000, 'z')), "oversized frame"},
    };
    for (const auto& f : faults) {
        std::vector<std::byte> stream = data(9, 99, "intact");
        append(stream, f.bytes);
        net::frame_reader r(1000, peer);
        std::vector<net::message> out;
        std::size_t room;
        std::byte* dst = r.space(room);
        ASSERT_GE(room, stream.size());
        std::memcpy(dst, stream.data(), stream.size());
        try {
            r.arrived(stream.size(), out);
            ADD_FAILURE() << "accepted: " << f.says;
        } catch (const net::frame_error& e) {
            EXPECT_NE(std::string(e.what()).find(f.says), std::string::npos) << e.what();
        }
        ASSERT_EQ(out.size(), 1u) << f.says;
        EXPECT_EQ(text(out[0]), "intact");
    }
}

TEST(frame_reader, a_stream_that_ends_inside_a_frame_says_how_far_it_got) {
    const auto whole = data(1, 1, "payload");
    net::frame_reader header_cut(1 << 20, peer);
    feed(header_cut, std::vector<std::byte>(whole.begin(), whole.begin() + 10), 100);
    EXPECT_NE(header_cut.unfinished().find("10 bytes of a frame header"), std::string::npos) << header_cut.unfinished();
    net::frame_reader body_cut(1 << 20, peer);
    feed(body_cut, std::vector<std::byte>(whole.begin(), whole.end() - 2), 100);
    EXPECT_NE(body_cut.unfinished().find("truncated frame"), std::string::npos) << body_cut.unfinished();
}

// A data frame's sequence (the header's bytes 6-7) reaches its message; in a
// control frame the same bytes are reserved flags and must be 0.
TEST(frame_reader, a_data_frames_sequence_reaches_its_message_and_control_frames_keep_flags_zero) {
    std::vector<std::byte> stream = frame(net::header::data(peer, 4, 1, 2, 0, 0xbeef), "hi");
    append(stream, data(4, 2, "no sequence"));
    net::frame_reader r(1 << 20, peer);
    const auto got = feed(r, stream, 5);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].sequence, 0xbeef);
    EXPECT_EQ(text(got[0]), "hi");
    EXPECT_EQ(got[1].sequence, 0);

    std::vector<std::byte> credit = frame(net::header::credit(peer, 10));
    credit[6] = std::byte{1};
    net::frame_reader r2(1 << 20, peer);
    try {
        (void)feed(r2, credit, 64);
        ADD_FAILURE() << "a credit frame with flags set was accepted";
    } catch (const net::frame_error& e) {
        EXPECT_NE(std::string(e.what()).find("flags 0x00000001 set"), std::string::npos) << e.what();
    }
}

// A payload a receiver named a buffer for (a landing, landing.hpp) is read
// into that buffer, whether it came with other frames through the read
// buffer or from the socket in pieces (larger than the read buffer); the
// frames around it arrive as usual, and the landing is used once.
TEST(frame_reader, a_payload_with_a_landing_is_read_into_the_landing_once) {
    for (std::size_t size : {std::size_t{100}, std::size_t{300 * 1024}}) {
        for (std::size_t chunk : {std::size_t{7}, std::size_t{4096}, std::size_t{1} << 20}) {
            csp::net::detail::landing_table table;
            std::vector<char> buffer(size, '-');
            table.add({peer, 1, 10}, reinterpret_cast<std::byte*>(buffer.data()), size, 0);
            std::string body(size, 'a');
            for (std::size_t k = 0; k < size; ++k) body[k] = static_cast<char>('a' + k % 26);
            std::vector<std::byte> stream = data(2, 5, "before");
            append(stream, data(1, 10, body));
            append(stream, data(1, 11, "after"));
            append(stream, data(1, 10, "same tag, later"));
            net::frame_reader r(1 << 20, peer, &table);
            const auto got = feed(r, stream, chunk);
            ASSERT_EQ(got.size(), 4u) << size << " " << chunk;
            EXPECT_EQ(text(got[0]), "before");
            EXPECT_EQ(static_cast<const void*>(got[1].body.data()), static_cast<const void*>(buffer.data()));
            EXPECT_EQ(got[1].body.size(), size);
            EXPECT_EQ(std::string(buffer.begin(), buffer.end()), body);
            EXPECT_EQ(text(got[2]), "after");
            EXPECT_EQ(text(got[3]), "same tag, later");  // in a block of its own: the landing was used
            EXPECT_NE(static_cast<const void*>(got[3].body.data()), static_cast<const void*>(buffer.data()));
            EXPECT_EQ(table.landed(), 1u);
        }
    }
}

// A landing that does not fit its frame (too small, another type) is left
// alone, and the frame arrives in a block of its own.
TEST(frame_reader, a_landing_too_small_or_of_another_type_is_not_used) {
    csp::net::detail::landing_table table;
    std::vector<char> small(4, '-'), typed(64, '-');
    table.add({peer, 1, 1}, reinterpret_cast<std::byte*>(small.data()), small.size(), 0);
    table.add({peer, 1, 2}, reinterpret_cast<std::byte*>(typed.data()), typed.size(), 77);
    std::vector<std::byte> stream = data(1, 1, "longer than four");
    append(stream, data(1, 2, "untyped"));
    net::frame_reader r(1 << 20, peer, &table);
    const auto got = feed(r, stream, 1000);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(text(got[0]), "longer than four");
    EXPECT_EQ(text(got[1]), "untyped");
    EXPECT_EQ(std::string(small.begin(), small.end()), "----");
    EXPECT_EQ(std::string(typed.begin(), typed.end()), std::string(64, '-'));
    EXPECT_EQ(table.landed(), 0u);
}

// The connection ends inside a landed payload: the reader, going, lets the
// landing go, so the receiver's withdrawal does not wait for bytes that
// will never come (it would hang here until the test's timeout).
TEST(frame_reader, a_connection_cut_inside_a_landed_payload_lets_the_landing_go) {
    csp::net::detail::landing_table table;
    const std::size_t size = 300 * 1024;
    std::vector<char> buffer(size, '-');
    table.add({peer, 1, 10}, reinterpret_cast<std::byte*>(buffer.data()), size, 0);
    const auto whole = data(1, 10, std::string(size, 'z'));
    {
        net::frame_reader r(1 << 20, peer, &table);
        const auto got = feed(r, std::vector<std::byte>(whole.begin(), whole.begin() + 100 * 1024), 4096);
        EXPECT_TRUE(got.empty());
        EXPECT_NE(r.unfinished().find("truncated frame"), std::string::npos) << r.unfinished();
        EXPECT_EQ(table.landed(), 1u);
    }
    bool removed = false;
    csp::run([&] {
        table.remove({peer, 1, 10});
        removed = true;
    });
    EXPECT_TRUE(removed);
}

// A payload of slice_from bytes or more that arrives whole shares the read
// buffer instead of being copied. Frames of every kind (small, sliced,
// unaligned, larger than the read buffer) in reads of random sizes, each
// message kept for a random while: every one has its own bytes when it is
// let go, and the payloads are aligned like any other. Regression: a frame
// larger than the read buffer moved the reader back to the buffer's start
// while earlier slices there were still held, and the next reads wrote over
// them (a pipelined reduce over TCP then summed another segment's bytes).
TEST(frame_reader, payloads_that_share_the_read_buffer_keep_their_bytes_while_held) {
    std::mt19937 rng(7);
    std::vector<std::byte> stream;
    std::vector<std::string> bodies;
    const std::size_t sizes[] = {8, 100, 20 * 1024 + 8, 64 * 1024, 64 * 1024 + 16, 300 * 1024};
    for (int k = 0; k < 600; ++k) {
        std::string body(sizes[rng() % std::size(sizes)], '\0');
        for (char& c : body) c = static_cast<char>('a' + rng() % 26);
        append(stream, data(1, static_cast<std::uint64_t>(k), body));
        bodies.push_back(std::move(body));
    }
    std::size_t sliced = 0;
    for (int pass = 0; pass < 3; ++pass) {
        net::frame_reader r(1 << 20, peer);
        std::deque<net::message> held;
        std::size_t next = 0;
        auto let_go = [&] {
            const net::message& m = held.front();
            ASSERT_EQ(m.tag, next);
            EXPECT_EQ(text(m), bodies[next]) << "frame " << next << " of size " << bodies[next].size();
            EXPECT_EQ(reinterpret_cast<std::uintptr_t>(m.body.data()) % alignof(std::max_align_t), 0u);
            ++next;
            held.pop_front();
        };
        for (std::size_t at = 0; at < stream.size();) {
            std::size_t room;
            std::byte* dst = r.space(room);
            const std::size_t n = std::min({room, stream.size() - at, std::size_t{1} + rng() % (400 * 1024)});
            std::memcpy(dst, stream.data() + at, n);
            at += n;
            std::vector<net::message> out;
            r.arrived(n, out);
            for (auto& m : out) held.push_back(std::move(m));
            for (std::size_t keep = rng() % 8; held.size() > keep;) let_go();
        }
        while (!held.empty()) let_go();
        EXPECT_EQ(next, bodies.size());
        sliced += r.slices();
    }
    EXPECT_GT(sliced, 0u);
}

// After a payload larger than the read buffer the reader asks for a header
// only, so that a second large payload goes to its block whole instead of a
// buffer of it being read here and copied; a small frame after it brings
// back full reads.
TEST(frame_reader, after_a_payload_larger_than_the_buffer_the_next_read_takes_a_header_only) {
    const std::string big(net::frame_reader::read_capacity + 1000, 'b');
    std::vector<std::byte> stream = data(1, 1, big);
    append(stream, data(1, 2, big));
    append(stream, data(1, 3, "small"));
    append(stream, data(1, 4, "next"));
    net::frame_reader r(1 << 24, peer);
    std::vector<std::size_t> rooms;
    std::vector<net::message> got;
    for (std::size_t at = 0; at < stream.size();) {
        std::size_t room;
        std::byte* dst = r.space(room);
        rooms.push_back(room);
        const std::size_t n = std::min(room, stream.size() - at);
        std::memcpy(dst, stream.data() + at, n);
        at += n;
        r.arrived(n, got);
    }
    ASSERT_EQ(got.size(), 4u);
    EXPECT_EQ(text(got[0]), big);
    EXPECT_EQ(text(got[1]), big);
    EXPECT_EQ(text(got[2]), "small");
    EXPECT_EQ(text(got[3]), "next");
    // A full read (header and the start of the first payload), the rest of
    // it straight into its block, a header, the second payload whole, a
    // header (the small frame's), then a full read again.
    ASSERT_GE(rooms.size(), 6u);
    EXPECT_EQ(rooms[0], net::frame_reader::read_capacity);
    EXPECT_EQ(rooms[2], net::header::size);
    EXPECT_EQ(rooms[3], big.size());
    EXPECT_EQ(rooms[4], net::header::size);
    EXPECT_GT(rooms[5], net::header::size);
}
