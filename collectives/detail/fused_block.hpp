#pragma once
// The one message a shared-variable force point reduces (shared_group.hpp).
//
// A fused block is a std::vector<std::uint64_t> (a raw sequence: the network
// sends its bytes, a local group moves it):
//
//   [0]                 header: kind << 32 | slot count n
//   [1 .. 2n]           per slot, in variable-id order:
//                         variable id << 32 | kind code,
//                         value print << 32 | payload words
//   [2n+1 ..]           the payloads, slot after slot
//
// A kind code names (element type, op) by a hash of their names, so ranks
// that run one binary agree on it. A value print is a hash of the
// variable's value before this force point (print_of): every rank's
// replica must hold the same bits there. Folding two blocks folds slot i of
// one into slot i of the other with slot i's op, but only when both carry
// the same descriptors: ranks that reached a force point with different
// pending updates, or with replicas that differ, produce a mismatch block
// instead,
//
//   [0]                 header: mismatch << 32
//   [1]                 n1, then 2*n1 descriptor words of one rank's set
//   [..]                n2, then 2*n2 descriptor words of another's
//
// and a mismatch folded with anything stays the first mismatch, so every
// algorithm (each folds op(lower ranks, higher ranks) the same way at every
// rank that computes the result) hands every rank one mismatch to report.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "collectives/operation.hpp"
#include "csp/type_name.hpp"

namespace csp::collectives::detail {

using word = std::uint64_t;
using block = std::vector<word>;

inline constexpr word block_fused = 1;
inline constexpr word block_mismatch = 2;

// How one (element type, op) pair travels and folds.
struct slot_kind {
    using fold_fn = void (*)(word* acc, const word* part, std::size_t words);
    std::uint32_t code;
    std::string label;  // "sum<double>", for error messages
    bool commutes;
    // acc = acc op part over `words` payload words.
    fold_fn fold;
    // Whether fold works element by element, so that the payloads of
    // adjacent slots of this kind fold as one (a number's slot, or a vector
    // with an element-wise op): a force point then folds each run of such
    // slots with one call (fused_op::runs).
    bool joins;
};

template <class E>
constexpr std::size_t words_per = (sizeof(E) + sizeof(word) - 1) / sizeof(word);

template <class E>
E load(const word* w) {
    E e;
    std::memcpy(&e, w, sizeof(E));
    return e;
}
template <class E>
void store(word* w, const E& e) {
    if constexpr (sizeof(E) % sizeof(word) != 0) std::memset(w, 0, words_per<E> * sizeof(word));
    std::memcpy(w, &e, sizeof(E));
}

// A value's payload: a number's words, or a vector's elements' words.
template <class T>
std::size_t payload_words(const T& v) {
    if constexpr (is_vector<T>::value) return v.size() * words_per<typename T::value_type>;
    else return words_per<T>;
}
template <class T>
void pack(word* out, const T& v) {
    if constexpr (is_vector<T>::value) {
        using E = typename T::value_type;
        for (const E& e : v) store(out, e), out += words_per<E>;
    } else {
        store(out, v);
    }
}
template <class T>
T unpack(const word* in, std::size_t words) {
    if constexpr (is_vector<T>::value) {
        using E = typename T::value_type;
        T v(words / words_per<E>);
        for (auto& e : v) e = load<E>(in), in += words_per<E>;
        return v;
    } else {
        (void)words;
        return load<T>(in);
    }
}

inline std::uint32_t fnv1a(std::string_view s) {
    std::uint32_t h = 2166136261u;
    for (unsigned char c : s) h = (h ^ c) * 16777619u;
    return h;
}

// Whether slots of (T, Op) fold element by element (slot_kind::joins).
template <class T, class Op>
constexpr bool folds_by_element =
    !is_vector<T>::value || requires { requires static_cast<bool>(Op::elementwise); };

template <class T, class Op>
void fold_slot(word* acc, const word* part, std::size_t words) {
    const Op op{};
    if constexpr (folds_by_element<T, Op>) {
        // Element by element, in place, over one slot's payload or a run of
        // them: no vector is built.
        using E = typename element<T>::type;
        for (std::size_t i = 0; i < words; i += words_per<E>)
            store(acc + i, static_cast<E>(op(load<E>(acc + i), load<E>(part + i))));
    } else {
        pack(acc, static_cast<T>(op(unpack<T>(acc, words), unpack<T>(part, words))));
    }
}

template <class T, class Op>
const slot_kind& kind_of() {
    static const slot_kind k = [] {
        std::string label = type_name<Op>() + "<" + type_name<T>() + ">";
        const auto cut = label.rfind("::", label.find('<'));
        if (cut != std::string::npos && label.starts_with("csp::collectives::")) label = label.substr(cut + 2);
        return slot_kind{fnv1a(label), label, commutes(Op{}), &fold_slot<T, Op>, folds_by_element<T, Op>};
    }();
    return k;
}

inline word descriptor(std::uint32_t id, std::uint32_t code) { return (word{id} << 32) | code; }
// A descriptor's second word. A payload of 2^32 words (32 GiB) or more
// would alias a shorter one here; the blocks' lengths are compared too.
inline word slot_info(std::size_t words, std::uint32_t print) {
    return (word{print} << 32) | static_cast<std::uint32_t>(words);
}
inline std::uint32_t info_words(word info) { return static_cast<std::uint32_t>(info); }

// Whether an element's bytes are its value, so that equal values print
// equally: integers, float and double, records the compiler knows have
// no padding (integers only: std::has_unique_object_representations); not
// long double (six bytes of padding) or other records, whose slots carry
// print 0 and are not compared.
template <class E>
constexpr bool prints_by_bytes = std::is_integral_v<E> || std::is_same_v<E, float> || std::is_same_v<E, double> ||
                                 std::has_unique_object_representations_v<E>;

// The print of a value's bits. Word i adds (w ^ i) * K for an odd K, so one
// changed word always changes the 64-bit sum (K is invertible mod 2^64)
// and the sums of a vector's words are independent (no chain of
// multiplications: a print costs a fraction of the packing beside it).
template <class T>
std::uint32_t print_of(const T& v) {
    using E = typename element<T>::type;
    if constexpr (!prints_by_bytes<E>) {
        (void)v;
        return 0;
    } else {
        constexpr word k = 0x9e3779b97f4a7c15ull;
        word h = 0, i = 0;
        const auto add = [&](const E& e) {
            word w[words_per<E>] = {};
            std::memcpy(w, &e, sizeof(E));
            for (word x : w) h += (x ^ i++) * k;
        };
        if constexpr (is_vector<T>::value) {
            for (const E& e : v) add(e);
        } else {
            add(v);
        }
        return static_cast<std::uint32_t>(h ^ (h >> 32));
    }
}
inline std::size_t slot_count(const block& b) { return static_cast<std::uint32_t>(b[0]); }
inline word block_kind(const block& b) { return b.empty() ? 0 : b[0] >> 32; }

// The descriptor words of a fused block (2 per slot).
inline std::vector<word> descriptors_of(const block& b) {
    const std::size_t n = slot_count(b);
    return {b.begin() + 1, b.begin() + 1 + static_cast<std::ptrdiff_t>(2 * n)};
}

// One fold of a fused block's payload: `words` words from where the
// previous run ended, folded with one call.
struct fold_run {
    slot_kind::fold_fn fold;
    std::size_t words;
};

// The allreduce op over fused blocks. `runs` cover this rank's payload in
// block order (shared_group::force plans them): a peer's block with the
// same descriptors has the same layout, so they fold it too.
struct fused_op {
    const std::vector<fold_run>* runs = nullptr;
    bool commutes = true;
    // Every rank's block holds the same slots by the SPMD rule (blocks
    // that differ fold into a mismatch block, above): one size everywhere.
    static constexpr bool equal_sizes = true;

    block operator()(const block& a, const block& b) const {
        block out = a;
        combine_into(out, b, false);
        return out;
    }

    // acc = part_first ? (*this)(part, acc) : (*this)(acc, part), folding in
    // acc's storage when the part comes second (operation.hpp's
    // combine_into asks for this): a force point's reduction allocates no
    // block per fold.
    void combine_into(block& acc, const block& part, bool part_first) const {
        if (part_first) {
            acc = (*this)(part, acc);
            return;
        }
        if (block_kind(acc) == block_mismatch) return;
        if (block_kind(part) == block_mismatch) {
            acc = part;
            return;
        }
        const std::size_t n = slot_count(acc);
        if (acc.size() != part.size() || !same_descriptors(acc.data(), part.data(), n)) {
            acc = mismatch(acc, part);
            return;
        }
        word* a = acc.data() + 1 + 2 * n;
        const word* b = part.data() + 1 + 2 * n;
        for (const fold_run& r : *runs) {
            r.fold(a, b, r.words);
            a += r.words;
            b += r.words;
        }
    }

    // The header and the 2n descriptor words agree. A plain loop: a force
    // point compares a few words at every fold, where a call to memcmp
    // costs more than the comparison.
    static bool same_descriptors(const word* a, const word* b, std::size_t n) noexcept {
        for (std::size_t i = 0; i <= 2 * n; ++i)
            if (a[i] != b[i]) return false;
        return true;
    }

    static block mismatch(const block& a, const block& b) {
        block out{block_mismatch << 32};
        for (const block* x : {&a, &b}) {
            const auto d = descriptors_of(*x);
            out.push_back(d.size() / 2);
            out.insert(out.end(), d.begin(), d.end());
        }
        return out;
    }
};

}  // namespace csp::collectives::detail
