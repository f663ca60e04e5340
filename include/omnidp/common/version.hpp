#pragma once
// Build identity: stored in every results file and printed by --version.

#include <string>

namespace omnidp {

[[nodiscard]] const char* version() noexcept;       // "0.1.0"
[[nodiscard]] const char* git_revision() noexcept;  // short hash at configure time, or "unknown"
[[nodiscard]] std::string version_line();           // "omni-dp 0.1.0 (git abc, libtorch x.y)"

}  // namespace omnidp
