// The pre-start pass: PlannedSource reads the manifest once, checks it all before serving
// anything, and keeps the requests to run (or reads only the tail again past its budget).
#include "omnidp/runtime/plan.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "job_test_support.hpp"
#include "omnidp/common/sha256.hpp"
#include "omnidp/models/cost.hpp"
#include "omnidp/models/model_facts.hpp"
#include "small_request.hpp"

namespace omnidp::runtime {
namespace {

using namespace omnidp::runtime::testing;

ManifestOptions options_for(const fs::path& manifest) {
  Config config;
  config.model.name = "synthetic";
  config.input.manifest = manifest.string();
  return job_manifest_options(config);
}

std::vector<Request> drain(RequestSource& source) {
  std::vector<Request> out;
  while (auto r = source.next()) out.push_back(std::move(*r));
  return out;
}

// The requests as a plain two-pass reading gives them (the reference).
std::vector<Request> reference(const ManifestOptions& o, const DoneMap& done) {
  ManifestSource source(o);
  ResumeSource filtered(source, done, o.path.string(), "out");
  return drain(filtered);
}

void expect_same(const std::vector<Request>& got, const std::vector<Request>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].id, want[i].id) << i;
    EXPECT_EQ(got[i].line, want[i].line) << i;
    EXPECT_EQ(got[i].index, want[i].index) << i;
    EXPECT_EQ(got[i].input_key, want[i].input_key) << i;
    EXPECT_EQ(got[i].num_frames, want[i].num_frames) << i;
  }
}

// The cost facts of the runtime's own model (the only one this test links).
ModelConfig synthetic_model() {
  ModelConfig m;
  m.name = "synthetic";
  return m;
}

TEST(PlannedSource, ReadsTheManifestOnceAndServesWhatItKept) {
  TempDir dir("planned-once");
  const fs::path manifest = write_manifest(dir.path(), 6);
  const ManifestOptions o = options_for(manifest);
  const DoneMap none;
  const auto want = reference(o, none);
  const CostModel cost(describe_model(synthetic_model()));
  PlannedSource planned(o, none, "out", cost);
  EXPECT_EQ(planned.plan().to_run, 6U);
  EXPECT_TRUE(planned.all_kept());
  EXPECT_EQ(planned.kept(), 6U);
  // The manifest is gone: what is served comes from the one pass.
  fs::remove(manifest);
  expect_same(drain(planned), want);
  EXPECT_EQ(planned.passes(), 1);
}

TEST(PlannedSource, SkipsDoneRequestsAndCountsThem) {
  TempDir dir("planned-resume");
  const ManifestOptions o = options_for(write_manifest(dir.path(), 5));
  const auto all = reference(o, {});
  const DoneMap done{{"r001", all[1].input_key}, {"r003", all[3].input_key}};
  const CostModel cost(describe_model(synthetic_model()));
  PlannedSource planned(o, done, "out", cost);
  EXPECT_EQ(planned.plan().to_run, 3U);
  EXPECT_EQ(planned.skipped(), 2U);
  expect_same(drain(planned), reference(o, done));
}

// Issue 39, class 6: a request that hung or killed its rank was handed out again on every
// run. The attempts of earlier runs (results/attempt_log.hpp) continue, and a request whose
// attempts with its input key were interrupted more than max_retries times is refused: the
// worker records it failed without running it. Another input key starts afresh.
TEST(Plan, AttemptsOfEarlierRunsContinueAndAPoisonRequestIsRefused) {
  TempDir dir("planned-attempts");
  const ManifestOptions o = options_for(write_manifest(dir.path(), 4));
  const auto all = reference(o, {});
  AttemptMap attempts;
  attempts[results::attempt_key("r000", all[0].input_key)] = {3, 2};  // 2 interrupted
  attempts[results::attempt_key("r001", all[1].input_key)] = {1, 1};  // 1 interrupted
  attempts[results::attempt_key("r002", "an older input key")] = {5, 5};
  attempts[results::attempt_key("r003", all[3].input_key)] = {2, 0};  // failed rows, rerun
  const CostModel cost(describe_model(synthetic_model()));
  const DoneMap none;
  PlannedSource planned(o, none, "out", cost, kDefaultKeptBytes, {}, AttemptRule{&attempts, 1});
  EXPECT_EQ(planned.plan().to_run, 4U);
  EXPECT_EQ(planned.plan().input_errors, 1U);  // r000: recorded failed without running
  const auto got = drain(planned);
  ASSERT_EQ(got.size(), 4U);
  EXPECT_EQ(got[0].prior_attempts, 3);
  EXPECT_EQ(got[0].refused,
            "not run again: 2 attempt(s) of this request (counted across runs) were interrupted "
            "before they ended (its own rank was killed, crashed, lost its node or aborted the "
            "job by scheduler.request_timeout_s while it ran; attempts cut short because the job "
            "was stopped from elsewhere do not count), more than scheduler.max_retries = 1; "
            "raise scheduler.max_retries to try it again");
  EXPECT_EQ(got[1].prior_attempts, 1);
  EXPECT_EQ(got[1].refused, "");
  EXPECT_EQ(got[2].prior_attempts, 0);
  EXPECT_EQ(got[2].refused, "");
  EXPECT_EQ(got[3].prior_attempts, 2);
  EXPECT_EQ(got[3].refused, "");
  // The hand-out continues the numbering: the attempt of a WorkItem.
  VectorSource source(got);
  WorkQueue queue(testing::manifest_order(0), 1, source, cost);
  std::vector<int> numbers;
  while (auto item = queue.next_for(0)) numbers.push_back(item->attempt);
  EXPECT_EQ(numbers, (std::vector<int>{4, 2, 1, 3}));
}

TEST(PlannedSource, PastItsBudgetReadsOnlyTheTailAgain) {
  TempDir dir("planned-tail");
  const fs::path manifest = write_manifest(dir.path(), 7);
  const ManifestOptions o = options_for(manifest);
  const auto all = reference(o, {});
  const DoneMap done{{"r000", all[0].input_key}, {"r004", all[4].input_key}};
  const auto want = reference(o, done);  // r001 r002 r003 r005 r006
  const CostModel cost(describe_model(synthetic_model()));
  const std::size_t two = request_bytes(all[1]) + request_bytes(all[2]);
  PlannedSource planned(o, done, "out", cost, two);
  EXPECT_FALSE(planned.all_kept());
  EXPECT_EQ(planned.kept(), 2U);
  EXPECT_EQ(planned.plan().to_run, 5U);
  EXPECT_EQ(planned.skipped(), 2U);
  // Lines before the tail are not read again: rewrite the first line into garbage (same
  // length, so the tail's offset stays valid). A full second pass would throw on it.
  std::string text;
  {
    std::ifstream in(manifest);
    std::ostringstream content;
    content << in.rdbuf();
    text = content.str();
  }
  const std::size_t end = text.find('\n');
  text.replace(0, end, std::string(end, 'x'));
  {
    std::ofstream out(manifest, std::ios::trunc);
    out << text;
  }
  expect_same(drain(planned), want);
  EXPECT_EQ(planned.passes(), 2);
}

TEST(PlannedSource, ABadLineAnywhereThrowsBeforeAnythingIsServed) {
  TempDir dir("planned-bad");
  const ManifestOptions o =
      options_for(write_manifest(dir.path(), 4, {R"({"id": "r001", "prompt": "again"})"}));
  const CostModel cost(describe_model(synthetic_model()));
  try {
    const DoneMap none;
    PlannedSource planned(o, none, "out", cost);
    ADD_FAILURE() << "no ManifestError";
  } catch (const ManifestError& e) {
    EXPECT_EQ(std::string(e.what()),
              o.path.string() + ":5:id: duplicate id \"r001\": first used on line 2");
  }
}

TEST(PlannedSource, EachInputFileIsHashedOnceAcrossBothPasses) {
  TempDir dir("planned-hash");
  std::vector<std::string> lines;
  for (int i = 0; i < 6; ++i) {
    const fs::path emb = dir.path() / ("e" + std::to_string(i % 3) + ".bin");
    std::ofstream(emb) << "embeddings " << i % 3;
    lines.push_back(R"({"id": "x)" + std::to_string(i) + R"(", "prompt": "p", "prompt_embeds": ")" +
                    emb.filename().string() + "\"}");
  }
  ManifestOptions o = options_for(write_manifest(dir.path(), 0, lines));
  int calls = 0;
  o.hash_cache = std::make_shared<FileHashCache>([&calls](const fs::path& p) {
    ++calls;
    return sha256_file_hex(p);
  });
  const CostModel cost(describe_model(synthetic_model()));
  const DoneMap none;
  PlannedSource planned(o, none, "out", cost, 1);  // keeps none: everything is read again
  EXPECT_EQ(planned.kept(), 0U);
  EXPECT_EQ(calls, 3);
  const auto got = drain(planned);
  EXPECT_EQ(got.size(), 6U);
  EXPECT_EQ(planned.passes(), 2);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(got[4].prompt_embeds_sha256, sha256_file_hex(dir.path() / "e1.bin"));
}

}  // namespace
}  // namespace omnidp::runtime
