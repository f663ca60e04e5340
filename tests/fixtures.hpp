#pragma once
// Where the tests find the reference fixtures (golden inputs and outputs of the Python
// reference implementations; docs/models.md, "Fixtures"), and what a test does without them.
//
// Two sets, one lookup: the repository's own cases (tests/fixtures/, small, always there: the Wan
// family's, written by scripts/wan_family_fixtures.py) and the shared set, in $OMNIDP_FIXTURES_DIR
// when set, else <checkout>/../shared/fixtures (the CMake cache variable OMNIDP_SHARED_DIR).
// fixture() takes a path from the shared set when it is there, else from the repository. A clone
// without the shared folder skips the tests of its cases with one line saying where the data is
// expected; under CI (CI=true) a missing folder fails them, so that nothing silently stops being
// checked.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

namespace omnidp::test {

// The fixtures folder (it may not exist).
[[nodiscard]] inline std::filesystem::path fixtures_dir() {
  if (const char* dir = std::getenv("OMNIDP_FIXTURES_DIR"); dir != nullptr && *dir != '\0') {
    return std::filesystem::path(dir);
  }
  return std::filesystem::path(OMNIDP_SHARED_DIR) / "fixtures";
}

// The repository's fixtures folder (tests/fixtures).
[[nodiscard]] inline std::filesystem::path repository_fixtures_dir() {
  return std::filesystem::path(OMNIDP_SOURCE_DIR) / "tests" / "fixtures";
}

// A case, file or folder, e.g. fixture("diffusers-ref/wan22_vae"): the shared set's when it has
// it, else the repository's when it has it, else the shared set's path (which does not exist).
[[nodiscard]] inline std::filesystem::path fixture(std::string_view relative) {
  std::error_code ec;
  const auto shared = fixtures_dir() / std::filesystem::path(relative);
  if (std::filesystem::exists(shared, ec)) return shared;
  if (const auto own = repository_fixtures_dir() / std::filesystem::path(relative);
      std::filesystem::exists(own, ec)) {
    return own;
  }
  return shared;
}

[[nodiscard]] inline bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string_view(ci) == "true";
}

// Empty when the fixtures folder is there, else the one line a skipped test prints.
[[nodiscard]] inline std::string missing_fixtures() {
  std::error_code ec;
  const auto dir = fixtures_dir();
  if (std::filesystem::is_directory(dir / "diffusers-ref", ec) &&
      std::filesystem::is_directory(dir / "transformers-ref", ec)) {
    return {};
  }
  return "reference fixtures not found at '" + dir.lexically_normal().string() +
         "' (expected diffusers-ref/ and transformers-ref/ there; set OMNIDP_FIXTURES_DIR to "
         "the fixtures folder)";
}

}  // namespace omnidp::test

// First statement of a test (or of a fixture's SetUp) that reads the reference fixtures.
#define OMNIDP_REQUIRE_FIXTURES()                                                        \
  do {                                                                                   \
    if (const std::string omnidp_missing_ = ::omnidp::test::missing_fixtures();          \
        !omnidp_missing_.empty()) {                                                      \
      if (::omnidp::test::in_ci()) FAIL() << omnidp_missing_ << " (CI=true: a failure)"; \
      GTEST_SKIP() << omnidp_missing_;                                                   \
    }                                                                                    \
  } while (false)
