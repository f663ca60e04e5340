// --deadline values and the Slurm end-time lookup (environment and squeue injected).
#include "omnidp/runtime/deadline.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <map>

#include "omnidp/common/error.hpp"

namespace omnidp::runtime {
namespace {

constexpr double kNow = 1764590400.0;  // 2025-12-01T12:00:00Z

std::string usage_error(const std::string& text) {
  try {
    (void)parse_deadline(text, kNow);
  } catch (const UsageError& e) {
    EXPECT_EQ(e.exit_code(), ExitCode::usage);
    return e.what();
  }
  return "(no error)";
}

TEST(Deadline, ParsesUtcOffsetEpochAndRelativeForms) {
  EXPECT_EQ(parse_deadline("2026-12-01T12:00:00Z", kNow), 1796126400.0);
  EXPECT_EQ(parse_deadline("2026-12-01 12:00Z", kNow), 1796126400.0);
  EXPECT_EQ(parse_deadline("2026-12-01T13:00:00+01:00", kNow), 1796126400.0);
  EXPECT_EQ(parse_deadline("2026-12-01T07:00:00-0500", kNow), 1796126400.0);
  EXPECT_EQ(parse_deadline("@1764590400", kNow), 1764590400.0);
  EXPECT_EQ(parse_deadline("+20s", kNow), kNow + 20.0);
  EXPECT_EQ(parse_deadline("+90", kNow), kNow + 90.0);
  EXPECT_EQ(parse_deadline("+15m", kNow), kNow + 900.0);
  EXPECT_EQ(parse_deadline("+2h", kNow), kNow + 7200.0);
}

TEST(Deadline, LocalTimeFollowsTheTimeZone) {
  const char* old = std::getenv("TZ");
  const std::string saved = old != nullptr ? old : "";
  ::setenv("TZ", "UTC-2", 1);  // POSIX: two hours east of UTC
  ::tzset();
  EXPECT_EQ(parse_deadline("2026-12-01T14:00:00", kNow), 1796126400.0);
  if (old != nullptr) {
    ::setenv("TZ", saved.c_str(), 1);
  } else {
    ::unsetenv("TZ");
  }
  ::tzset();
}

TEST(Deadline, BadValuesAreUsageErrorsNamingTheValue) {
  const std::string forms =
      " (expected 2026-12-01T12:00:00 local, ...Z or ...+01:00, @EPOCH, or +N[s|m|h])";
  EXPECT_EQ(usage_error("tomorrow"), "--deadline: 'tomorrow' is not a time" + forms);
  EXPECT_EQ(usage_error(""), "--deadline: '' is empty" + forms);
  EXPECT_EQ(usage_error("+20x"), "--deadline: '+20x' is not a duration" + forms);
  EXPECT_EQ(usage_error("+"), "--deadline: '+' is not a duration" + forms);
  EXPECT_EQ(usage_error("+-5m"), "--deadline: '+-5m' is not a duration" + forms);
  EXPECT_EQ(usage_error("@12ab"), "--deadline: '@12ab' is not a Unix time" + forms);
  EXPECT_EQ(usage_error("2026-13-01T12:00:00"),
            "--deadline: '2026-13-01T12:00:00' is not a valid date and time" + forms);
  EXPECT_EQ(usage_error("2026-02-30T12:00:00Z"),
            "--deadline: '2026-02-30T12:00:00Z' is not a valid date" + forms);
  EXPECT_EQ(usage_error("2026-12-01T12:00:00 UTC"),
            "--deadline: '2026-12-01T12:00:00 UTC' has an unknown time zone" + forms);
  EXPECT_EQ(usage_error("2026-12-01"), "--deadline: '2026-12-01' is not a time" + forms);
}

struct FakeSlurm {
  std::map<std::string, std::string> env;
  bool squeue = true;
  std::optional<std::string> squeue_out;
  std::vector<std::string> commands;

  SlurmProbe probe() {
    SlurmProbe p;
    p.getenv = [this](const char* name) -> std::optional<std::string> {
      const auto it = env.find(name);
      if (it == env.end()) return std::nullopt;
      return it->second;
    };
    p.has_squeue = [this] { return squeue; };
    p.run = [this](const std::string& command) {
      commands.push_back(command);
      return squeue_out;
    };
    return p;
  }
};

TEST(SlurmDeadline, TheJobEndTimeVariableComesFirst) {
  FakeSlurm f;
  f.env = {{"SLURM_JOB_END_TIME", "1796126400"}, {"SLURM_JOB_ID", "42"}};
  const auto d = slurm_deadline(f.probe());
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->unix_s, 1796126400.0);
  EXPECT_EQ(d->source, "SLURM_JOB_END_TIME");
  EXPECT_TRUE(f.commands.empty());
}

TEST(SlurmDeadline, ElseSqueuePrintsTheEndTime) {
  FakeSlurm f;
  f.env = {{"SLURM_JOB_ID", "42"}};
  f.squeue_out = "2026-12-01T12:00:00Z\n";
  const auto d = slurm_deadline(f.probe());
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->unix_s, 1796126400.0);
  EXPECT_EQ(d->source, "squeue -j 42 (%e)");
  EXPECT_EQ(f.commands, (std::vector<std::string>{"squeue -h -j 42 -o %e 2>/dev/null"}));
}

TEST(SlurmDeadline, NoSlurmNoSqueueAFailureOrNoLimitMeanNoDeadline) {
  FakeSlurm none;
  EXPECT_FALSE(slurm_deadline(none.probe()).has_value());
  EXPECT_TRUE(none.commands.empty());

  FakeSlurm no_squeue;
  no_squeue.env = {{"SLURM_JOB_ID", "42"}};
  no_squeue.squeue = false;
  EXPECT_FALSE(slurm_deadline(no_squeue.probe()).has_value());
  EXPECT_TRUE(no_squeue.commands.empty());

  FakeSlurm failing;  // squeue exits non-zero: a warning, no deadline
  failing.env = {{"SLURM_JOB_ID", "42"}};
  EXPECT_FALSE(slurm_deadline(failing.probe()).has_value());
  EXPECT_EQ(failing.commands.size(), 1U);

  for (const char* unlimited : {"UNLIMITED\n", "N/A\n", "Unknown\n", "garbage\n"}) {
    FakeSlurm f;
    f.env = {{"SLURM_JOB_ID", "42"}};
    f.squeue_out = unlimited;
    EXPECT_FALSE(slurm_deadline(f.probe()).has_value()) << unlimited;
  }

  FakeSlurm odd_id;  // never passed to a shell
  odd_id.env = {{"SLURM_JOB_ID", "42; rm -rf /"}};
  EXPECT_FALSE(slurm_deadline(odd_id.probe()).has_value());
  EXPECT_TRUE(odd_id.commands.empty());
}

TEST(Deadline, FormatsUtc) { EXPECT_EQ(format_utc(1796126400.5), "2026-12-01T12:00:00Z"); }

}  // namespace
}  // namespace omnidp::runtime
