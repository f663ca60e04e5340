#include "omnidp/common/version.hpp"

namespace omnidp {

const char* version() noexcept { return OMNIDP_VERSION; }
const char* git_revision() noexcept { return OMNIDP_GIT_REVISION; }
std::string version_line() {
  return std::string("omni-dp ") + version() + " (git " + git_revision() + ")";
}

}  // namespace omnidp
