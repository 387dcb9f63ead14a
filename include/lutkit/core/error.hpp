// lutkit — error reporting. Every bad-input path throws lutkit::error with a message that
// names the offending argument; kernels never crash or silently produce a wrong answer.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace lutkit {

class error : public std::invalid_argument {
 public:
  explicit error(const std::string& what) : std::invalid_argument("lutkit: " + what) {}
};

namespace detail {
// require(ok, parts...): the message is assembled only when the check fails, so checks on
// hot paths cost a compare.
template <class... Parts>
inline void require(bool ok, const Parts&... parts) {
  if (ok) [[likely]]
    return;
  std::ostringstream os;
  (os << ... << parts);
  throw error(os.str());
}
}  // namespace detail
}  // namespace lutkit
