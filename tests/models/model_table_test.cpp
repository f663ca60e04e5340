#include "omnidp/models/model_table.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace omnidp::models {
namespace {

// Set on the main thread before the job's threads (a later setenv beside the coordinator's
// getenv crashed rank 0 in libjpeg); a value already there is the user's and stays.
TEST(ProcessEnvironment, StrictSetsCublasWorkspaceOnceAndKeepsAUsersValue) {
  ::unsetenv("CUBLAS_WORKSPACE_CONFIG");
  Config relaxed;
  relaxed.determinism.strict = false;
  set_process_environment(relaxed);
  EXPECT_EQ(std::getenv("CUBLAS_WORKSPACE_CONFIG"), nullptr);
  Config strict;
  strict.determinism.strict = true;
  set_process_environment(strict);
  ASSERT_NE(std::getenv("CUBLAS_WORKSPACE_CONFIG"), nullptr);
  EXPECT_EQ(std::string(std::getenv("CUBLAS_WORKSPACE_CONFIG")), ":4096:8");
  ::setenv("CUBLAS_WORKSPACE_CONFIG", ":16:8", 1);
  set_process_environment(strict);
  EXPECT_EQ(std::string(std::getenv("CUBLAS_WORKSPACE_CONFIG")), ":16:8");
  ::unsetenv("CUBLAS_WORKSPACE_CONFIG");
}

}  // namespace
}  // namespace omnidp::models
