// lutkit — error reporting. Every bad-input path throws lutkit::error with a message that
// names the offending argument; kernels never crash or silently produce a wrong answer.
#pragma once
#include <stdexcept>
#include <string>

namespace lutkit {

class error : public std::invalid_argument {
 public:
  explicit error(const std::string& what) : std::invalid_argument("lutkit: " + what) {}
};

namespace detail {
inline void require(bool ok, const char* what) {
  if (!ok) throw error(what);
}
inline void require(bool ok, const std::string& what) {
  if (!ok) throw error(what);
}
}  // namespace detail
}  // namespace lutkit
