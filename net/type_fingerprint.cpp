#include "net/type_fingerprint.hpp"

#include <cstdio>
#include <map>
#include <mutex>

namespace csp::net {
namespace detail {
namespace {

struct registry {
    std::mutex lock;
    std::map<std::uint32_t, std::string> names;
};

// Constructed on first use: registrations run during static initialisation.
registry& types() {
    static registry r;
    return r;
}

}  // namespace

// FNV-1a over the name, then the size: a fingerprint, not a secret.
std::uint32_t fingerprint_of(const char* abi_name, std::size_t size) noexcept {
    std::uint32_t h = 2166136261u;
    auto mix = [&](unsigned char c) {
        h ^= c;
        h *= 16777619u;
    };
    for (const char* p = abi_name; *p; ++p) mix(static_cast<unsigned char>(*p));
    for (int i = 0; i < 8; ++i) mix(static_cast<unsigned char>(size >> (8 * i)));
    return h ? h : 1;  // 0 means untyped
}

std::uint32_t register_type(std::uint32_t fp, const std::type_info& t) {
    auto& r = types();
    std::lock_guard lk(r.lock);
    r.names.try_emplace(fp, csp::type_name(t));
    return fp;
}

}  // namespace detail

std::string type_name_of(std::uint32_t fingerprint) {
    auto& r = detail::types();
    std::lock_guard lk(r.lock);
    if (auto it = r.names.find(fingerprint); it != r.names.end()) return it->second;
    char buf[64];
    std::snprintf(buf, sizeof buf, "a type this program does not use (fingerprint 0x%08X)", fingerprint);
    return buf;
}

}  // namespace csp::net
