#pragma once
// The bytes of one message, shared and immutable once filled.
//
// A payload either owns a fresh block (allocate: aligned for any scalar type,
// uninitialised, one allocation) or keeps alive whatever holds the bytes
// (adopt: a moved-in std::vector, a serialised buffer), which is how a vector
// given to send() reaches the socket without being copied.
#include <cstddef>
#include <memory>

namespace csp::net {

class payload {
public:
    payload() = default;

    // A block of n bytes to fill through `out` before the payload is shared.
    static payload allocate(std::size_t n, std::byte*& out) {
        payload p;
        p.size_ = n;
        if (n == 0) {
            out = nullptr;
            return p;
        }
        constexpr std::size_t unit = sizeof(std::max_align_t);
        auto block = std::make_shared_for_overwrite<std::max_align_t[]>((n + unit - 1) / unit);
        out = reinterpret_cast<std::byte*>(block.get());
        p.data_ = std::shared_ptr<const std::byte>(std::move(block), out);
        return p;
    }

    // Bytes [data, data + n) that stay valid while `owner` lives.
    template <class Owner>
    static payload adopt(std::shared_ptr<Owner> owner, const void* data, std::size_t n) {
        payload p;
        p.size_ = n;
        if (n) p.data_ = std::shared_ptr<const std::byte>(std::move(owner), static_cast<const std::byte*>(data));
        return p;
    }

    const std::byte* data() const noexcept { return data_.get(); }
    std::size_t size() const noexcept { return size_; }

private:
    std::shared_ptr<const std::byte> data_;
    std::size_t size_ = 0;
};

}  // namespace csp::net
