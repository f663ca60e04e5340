// The effective configuration of a run: no test-only faults section unless a fault is set.
#include "omnidp/config/effective_yaml.hpp"

#include <gtest/gtest.h>

namespace omnidp {
namespace {

TEST(RunYaml, LeavesOutTheFaultsSectionAtItsDefaults) {
  const Config c = default_config();
  const std::string yaml = to_run_yaml(c);
  EXPECT_EQ(yaml.find("faults"), std::string::npos) << yaml;
  EXPECT_EQ(yaml.find("kill_rank"), std::string::npos) << yaml;
  // Everything else is to_yaml's, and reads back to the same Config.
  const std::string full = to_yaml(c);
  const std::size_t faults = full.find("faults:\n");
  ASSERT_NE(faults, std::string::npos);
  std::size_t end = full.find('\n', faults) + 1;  // past the section: its indented lines
  while (end < full.size() && full.compare(end, 2, "  ") == 0) end = full.find('\n', end) + 1;
  EXPECT_EQ(yaml, full.substr(0, faults) + full.substr(end));
  Config back = parse_config_yaml(yaml, "run.yaml");
  back.source_file = c.source_file;
  EXPECT_EQ(back, c);
}

TEST(RunYaml, ShowsTheWholeFaultsSectionOnceAFaultIsSet) {
  Config c = default_config();
  c.faults.kill_rank = 1;
  c.faults.kill_after = 2;
  const std::string yaml = to_run_yaml(c);
  EXPECT_EQ(yaml, to_yaml(c));
  EXPECT_NE(yaml.find("faults:\n  fail_ids: []\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("  kill_rank: 1\n  kill_after: 2\n"), std::string::npos) << yaml;
}

}  // namespace
}  // namespace omnidp
