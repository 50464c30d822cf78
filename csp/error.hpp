#pragma once
// Error policy of the core.
//
// - Every error the library reports is an exception derived from csp::error,
//   with a message that names the channel, process or argument involved.
// - Blocking operations throw; they never return a status. After a throw the
//   operation did not happen: no value was taken from or left in a channel.
// - poisoned_error: the channel was poisoned; every later operation on it throws.
// - retired_error: every holder of the other side has retired.
// - deadlock_error: the runtime found every process blocked with nothing left
//   that could wake any of them; the message lists them and what they wait on.
// - usage_error: the program broke a rule of the API (a second writer on a
//   one-to-one channel, a barrier resigned twice, a nested runtime...).
// - Internal invariants are checked with assert (debug builds only).
#include <stdexcept>
#include <string>

namespace csp {

class error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class poisoned_error : public error {
public:
    explicit poisoned_error(const std::string& what_was_poisoned)
        : error(what_was_poisoned + " is poisoned") {}
};

class retired_error : public error {
public:
    explicit retired_error(const std::string& what_retired) : error(what_retired) {}
};

class deadlock_error : public error {
public:
    using error::error;
};

class usage_error : public error {
public:
    using error::error;
};

}  // namespace csp
