#pragma once
// A value whose elements are sent from where they are (loans.hpp lends
// them). To the codec it is the span it lends: sent as a std::vector<E>,
// received as one, type-checked as one; but each encoding borrows the
// span's memory for its message instead of copying it, and the lender
// counts that message until it is dropped. The lent value itself holds
// nothing: keeping it, or sending it twice, is fine. Anything that cannot
// send bytes as they are (a local channel, a communicator of fibers) takes
// the elements as a copy (csp::owned), like any span.
#include <cstddef>
#include <span>
#include <type_traits>
#include <vector>

#include "csp/view.hpp"
#include "net/payload.hpp"

namespace csp::net {

// What lends: makes the payload of one message that borrows [data, data + n).
class lender {
public:
    virtual payload borrow(const void* data, std::size_t n) = 0;

protected:
    ~lender() = default;
};

template <class E>
class lent {
public:
    lent(std::span<const E> elements, lender& from) : elements_(elements), from_(&from) {}

    // The payload of one message: the elements where they are, counted by
    // their lender until the message is dropped.
    payload bytes() const {
        if (elements_.empty()) return {};
        return from_->borrow(elements_.data(), elements_.size_bytes());
    }
    // As a view (csp/view.hpp), for a copy of the elements.
    const E* begin() const noexcept { return elements_.data(); }
    const E* end() const noexcept { return elements_.data() + elements_.size(); }
    const E* data() const noexcept { return elements_.data(); }
    std::size_t size() const noexcept { return elements_.size(); }

private:
    std::span<const E> elements_;
    lender* from_;
};

template <class T> struct is_lent : std::false_type {};
template <class E> struct is_lent<lent<E>> : std::true_type {};
template <class T>
inline constexpr bool is_lent_v = is_lent<std::remove_cvref_t<T>>::value;

}  // namespace csp::net

template <class E> struct csp::is_view<csp::net::lent<E>> : std::true_type {};
template <class E> struct csp::owning<csp::net::lent<E>> { using type = std::vector<E>; };
