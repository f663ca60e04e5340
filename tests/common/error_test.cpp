#include "omnidp/common/error.hpp"

#include <gtest/gtest.h>

namespace omnidp {
namespace {

TEST(Error, ConfigErrorNamesPathFirst) {
  const ConfigError e("scheduler.policy", "unknown value 'fast'");
  EXPECT_STREQ(e.what(), "scheduler.policy: unknown value 'fast'");
  EXPECT_EQ(e.kind(), ErrorKind::config);
  EXPECT_EQ(e.exit_code(), ExitCode::usage);
}

TEST(Error, ManifestErrorNamesFileLineField) {
  const ManifestError e("p.jsonl", 12, "seed", "must be an integer in 0..2^63-1");
  EXPECT_STREQ(e.what(), "p.jsonl:12:seed: must be an integer in 0..2^63-1");
  EXPECT_EQ(e.line(), 12U);
  EXPECT_EQ(e.exit_code(), ExitCode::usage);
}

TEST(Error, RuntimeErrorsMapToFailureExit) {
  EXPECT_EQ(RuntimeError("x").exit_code(), ExitCode::some_failed);
  EXPECT_EQ(Error(ErrorKind::interrupted, "drained").exit_code(), ExitCode::interrupted);
  EXPECT_STREQ(MpiError("MPI_Send", 3, "MPI_ERR_RANK").what(), "rank 3: MPI_Send: MPI_ERR_RANK");
}

}  // namespace
}  // namespace omnidp
