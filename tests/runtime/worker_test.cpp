// The worker actor alone: what it posts to the comm thread and hands to the writer for each
// outcome of a request, on a scripted pipeline and an injected clock.
#include "omnidp/runtime/worker.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

#include "actor_test_support.hpp"

namespace omnidp::runtime {
namespace {

using testing::ActorHarness;

// Fails or succeeds by request id; calls on_step for 2 steps.
class ScriptedPipeline final : public Pipeline {
 public:
  Video generate(const Request& request, const GenerateContext& ctx) override {
    if (ctx.on_step) {
      ctx.on_step(0, 2);
      ctx.on_step(1, 2);
    }
    if (request.id == "flaky") throw TransientModelError("flaky failed");
    if (request.id == "oom") throw RuntimeError("CUDA out of memory (tried 2 GiB)");
    if (request.id == "bad") throw ModelError("bad failed");
    if (request.id == "torch") {  // a c10::Error's what(): the message, then its backtrace
      throw std::runtime_error(
          "shape '[2, 3]' is invalid for input of size 5\n"
          "Exception raised from view at ../aten/src/ATen/native/TensorShape.cpp:12 (most recent "
          "call first):\n"
          "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x57\n"
          "frame #1: at::native::view(at::Tensor const&, c10::ArrayRef<long>) + 0x1f\n");
    }
    Video v;
    v.frames = request.num_frames;
    v.height = request.height;
    v.width = request.width;
    v.data.assign(v.byte_size(), 7);
    return v;
  }
  std::string model_name() const override { return "scripted"; }
  std::string device_name() const override { return "cpu-test"; }
};

JobOptions scripted_job() {
  JobOptions o;
  o.config.model.name = "synthetic";
  o.config.model.device = DeviceKind::cpu;
  o.config.scheduler.max_retries = 1;
  o.make_pipeline = [](const DeviceBinding&) { return std::make_unique<ScriptedPipeline>(); };
  o.clock = [t = 0.0]() mutable { return t += 1.0; };  // each reading one second later
  return o;
}

AssignMsg assign(const std::string& id, int attempt = 1) {
  AssignMsg a;
  a.request.id = id;
  a.request.input_key = "key-" + id;
  a.request.prompt = "prompt " + id;
  a.request.seed = 42;
  a.request.num_frames = 5;
  a.request.height = 16;
  a.request.width = 32;
  a.request.num_inference_steps = 2;
  a.request.fps = 16;
  a.attempt = attempt;
  return a;
}

std::vector<WriteJob> writes(ActorHarness& h) {
  std::vector<WriteJob> out;
  for (auto& item : h.context->writes.take_all())
    out.push_back(std::get<WriteJob>(std::move(item)));
  return out;
}

TEST(Worker, LeaderRunsARequestThenHandsItsRowToTheWriter) {
  ActorHarness h(scripted_job());
  h.context->work.push(assign("ok"));
  h.context->work.close();
  Worker(*h.context).run();

  const auto events = h.events();
  ASSERT_EQ(events.size(), 5U);
  EXPECT_EQ(std::get<Loaded>(events[0]).device, "cpu-test");
  EXPECT_EQ(std::get<Loaded>(events[0]).error, nullptr);
  EXPECT_EQ(std::get<WorkerStarted>(events[1]).assignment.request.id, "ok");
  EXPECT_EQ(std::get<WorkerStarted>(events[1]).since, 1.0);
  EXPECT_EQ(std::get<WorkerNearlyDone>(events[2]).id, "ok");  // after the second-to-last step
  EXPECT_EQ(std::get<WorkerIdle>(events[3]).id, "ok");
  EXPECT_EQ(std::get<WorkerIdle>(events[3]).busy_s, 1.0);
  const auto& generated = std::get<OutMsg>(events[4]);
  EXPECT_EQ(generated.dest, 0);
  EXPECT_EQ(std::get<GeneratedMsg>(generated.message), GeneratedMsg{"ok"});

  const auto rows = writes(h);
  ASSERT_EQ(rows.size(), 1U);
  const ResultRecord& r = rows[0].record;
  EXPECT_EQ(r.id, "ok");
  EXPECT_EQ(r.input_key, "key-ok");
  EXPECT_EQ(r.status, RequestStatus::ok);
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.host, "test-host");
  EXPECT_EQ(r.device, "cpu-test");
  EXPECT_EQ(r.rank, 0);
  EXPECT_EQ(r.replica, 0);
  EXPECT_EQ(r.frames, 5);
  EXPECT_EQ(r.height, 16);
  EXPECT_EQ(r.width, 32);
  EXPECT_EQ(r.steps, 2);
  EXPECT_EQ(r.attempt, 1);
  EXPECT_EQ(r.prompt, "prompt ok");
  EXPECT_EQ(r.seed, 42U);
  EXPECT_EQ(r.fps, 16);
  EXPECT_EQ(r.seconds, 1.0);
  EXPECT_EQ(r.end_time - r.start_time, 1.0);
  EXPECT_EQ(r.video_sha256, "");  // the writer hashes it
  EXPECT_EQ(rows[0].video.byte_size(), 5U * 16U * 32U * 3U);
}

TEST(Worker, TransientFailuresAreRetriedUntilMaxRetriesThenRecordedFailed) {
  ActorHarness h(scripted_job());
  h.context->work.push(assign("flaky", 1));
  h.context->work.push(assign("oom", 1));    // a library's out-of-memory counts as transient
  h.context->work.push(assign("flaky", 2));  // max_retries 1: this attempt was the last
  h.context->work.push(assign("bad", 1));    // not transient: failed at once
  h.context->work.close();
  Worker(*h.context).run();

  const auto messages = ActorHarness::messages(h.events());
  ASSERT_EQ(messages.size(), 4U);
  EXPECT_EQ(std::get<RetryMsg>(messages[0].message), (RetryMsg{"flaky", 0, 1, "flaky failed", 1.0}));
  EXPECT_EQ(std::get<RetryMsg>(messages[1].message),
            (RetryMsg{"oom", 0, 1, "CUDA out of memory (tried 2 GiB)", 1.0}));
  EXPECT_EQ(std::get<GeneratedMsg>(messages[2].message), GeneratedMsg{"flaky"});
  EXPECT_EQ(std::get<GeneratedMsg>(messages[3].message), GeneratedMsg{"bad"});
  const auto rows = writes(h);
  ASSERT_EQ(rows.size(), 2U);
  EXPECT_EQ(rows[0].record.status, RequestStatus::failed);
  EXPECT_EQ(rows[0].record.error, "flaky failed");
  EXPECT_EQ(rows[0].record.attempt, 2);
  EXPECT_EQ(rows[1].record.error, "bad failed");
  EXPECT_EQ(rows[1].video.byte_size(), 0U);
}

TEST(Worker, AnInputErrorIsRecordedFailedWithoutRunning) {
  ActorHarness h(scripted_job());
  AssignMsg a = assign("broken");
  a.request.input_error = "image missing";
  h.context->work.push(a);
  h.context->work.close();
  Worker(*h.context).run();

  const auto events = h.events();
  ASSERT_EQ(events.size(), 2U);  // Loaded, Generated: no WorkerStarted, no WorkerIdle
  EXPECT_EQ(std::get<GeneratedMsg>(std::get<OutMsg>(events[1]).message), GeneratedMsg{"broken"});
  const auto rows = writes(h);
  ASSERT_EQ(rows.size(), 1U);
  EXPECT_EQ(rows[0].record.status, RequestStatus::failed);
  EXPECT_EQ(rows[0].record.error, "input error: image missing");
  EXPECT_EQ(rows[0].record.start_time, rows[0].record.end_time);
}

// Issue 39, class 13: a failed row stored libtorch's 30-frame C++ backtrace.
TEST(Worker, AFailedRowStoresTheMessageNotTheBacktrace) {
  ActorHarness h(scripted_job());
  h.context->work.push(assign("torch"));
  h.context->work.close();
  Worker(*h.context).run();

  const auto rows = writes(h);
  ASSERT_EQ(rows.size(), 1U);
  EXPECT_EQ(rows[0].record.status, RequestStatus::failed);
  EXPECT_EQ(rows[0].record.error, "shape '[2, 3]' is invalid for input of size 5");
}

// Issue 39, class 6: rank 0 refused a request whose attempts were interrupted too often.
TEST(Worker, ARefusedRequestIsRecordedFailedWithoutRunning) {
  ActorHarness h(scripted_job());
  AssignMsg a = assign("poison", 3);
  a.request.refused = "not run again: refused";
  h.context->work.push(a);
  h.context->work.close();
  Worker(*h.context).run();

  const auto events = h.events();
  ASSERT_EQ(events.size(), 2U);  // Loaded, Generated: no WorkerStarted
  EXPECT_EQ(std::get<GeneratedMsg>(std::get<OutMsg>(events[1]).message), GeneratedMsg{"poison"});
  const auto rows = writes(h);
  ASSERT_EQ(rows.size(), 1U);
  EXPECT_EQ(rows[0].record.status, RequestStatus::failed);
  EXPECT_EQ(rows[0].record.error, "not run again: refused");
  EXPECT_EQ(rows[0].record.attempt, 3);
  EXPECT_EQ(rows[0].record.input_key, "key-poison");
}

TEST(Worker, AFailureOfAnAbandonedRequestGivesItBack) {
  ActorHarness h(scripted_job());
  h.context->abandon.store(true);
  h.context->work.push(assign("bad"));
  h.context->work.close();
  Worker(*h.context).run();

  const auto messages = ActorHarness::messages(h.events());
  ASSERT_EQ(messages.size(), 1U);
  EXPECT_EQ(std::get<ReturnedMsg>(messages[0].message), (ReturnedMsg{0, {"bad"}}));
  EXPECT_TRUE(writes(h).empty());
}

TEST(Worker, AFailedLoadIsReportedOnce) {
  JobOptions o = scripted_job();
  o.make_pipeline = [](const DeviceBinding&) -> std::unique_ptr<Pipeline> {
    throw ModelError("no weights here");
  };
  ActorHarness h(o);
  h.context->work.push(assign("ok"));
  Worker(*h.context).run();  // returns without reading its work

  const auto events = h.events();
  ASSERT_EQ(events.size(), 1U);
  const auto& loaded = std::get<Loaded>(events[0]);
  EXPECT_EQ(loaded.device, "");
  EXPECT_EQ(error_info(loaded.error), (ErrorInfo{ErrorKind::model, "no weights here"}));
  EXPECT_EQ(h.context->work.take_all().size(), 1U);
}

// Reports its transformer forwards by request id (GenerateContext::on_forwards, as a pipeline
// with a step cache does) and a FLOP count of 4 TFLOP transformer, 0.5 VAE, 0.25 text.
class CountingPipeline final : public Pipeline {
 public:
  Video generate(const Request& request, const GenerateContext& ctx) override {
    if (ctx.on_forwards) {
      if (request.id == "cached" || request.id == "late-failure") ctx.on_forwards({40, 10});
      if (request.id == "whole") ctx.on_forwards({40, 40});
    }
    if (request.id == "late-failure") throw ModelError("failed after its forwards");
    Video v;
    v.frames = request.num_frames;
    v.height = request.height;
    v.width = request.width;
    v.data.assign(v.byte_size(), 1);
    return v;
  }
  std::optional<RequestFlops> flops(const Request&) const override {
    return RequestFlops{4e12, 0.5e12, 0.25e12, 0.0};
  }
  std::string model_name() const override { return "counting"; }
  std::string device_name() const override { return "cpu-test"; }
};

// The row records the forwards the pipeline reported, and its model_tflop counts only the
// transformer forwards computed: 4 x 10/40 + 0.5 + 0.25 = 1.75 TFLOP; without a skip, or
// without a report (0, 0: not recorded), the whole 4.75; a failed request records none.
TEST(Worker, TheRowRecordsTheForwardsAndTheFlopsOfTheComputedOnes) {
  JobOptions o = scripted_job();
  o.make_pipeline = [](const DeviceBinding&) { return std::make_unique<CountingPipeline>(); };
  ActorHarness h(o);
  for (const char* id : {"cached", "whole", "silent", "late-failure"})
    h.context->work.push(assign(id));
  h.context->work.close();
  Worker(*h.context).run();

  const auto rows = writes(h);
  ASSERT_EQ(rows.size(), 4U);
  const ResultRecord& cached = rows[0].record;
  EXPECT_EQ(cached.id, "cached");
  EXPECT_EQ(cached.forwards, 40);
  EXPECT_EQ(cached.forwards_computed, 10);
  EXPECT_EQ(cached.model_tflop, 1.75);
  const ResultRecord& whole = rows[1].record;
  EXPECT_EQ(whole.forwards, 40);
  EXPECT_EQ(whole.forwards_computed, 40);
  EXPECT_EQ(whole.model_tflop, 4.75);
  const ResultRecord& silent = rows[2].record;
  EXPECT_EQ(silent.forwards, 0);
  EXPECT_EQ(silent.forwards_computed, 0);
  EXPECT_EQ(silent.model_tflop, 4.75);
  const ResultRecord& failed = rows[3].record;
  EXPECT_EQ(failed.status, RequestStatus::failed);
  EXPECT_EQ(failed.forwards, 0);
  EXPECT_EQ(failed.forwards_computed, 0);
  EXPECT_EQ(failed.model_tflop, 0.0);
}

// The transformer part scaled by computed / forwards; the VAE, text and image parts whole.
TEST(Worker, ComputedModelTflopScalesOnlyTheTransformer) {
  const RequestFlops flops{4e12, 0.5e12, 0.25e12, 0.125e12};
  EXPECT_EQ(computed_model_tflop(flops, {40, 10}), 1.875);
  EXPECT_EQ(computed_model_tflop(flops, {40, 40}), 4.875);
  EXPECT_EQ(computed_model_tflop(flops, {0, 0}), 4.875);    // not recorded: as counted
  EXPECT_EQ(computed_model_tflop(flops, {40, 50}), 4.875);  // more than asked for: all of them
  EXPECT_EQ(computed_model_tflop(flops, {40, 0}), 0.875);
  EXPECT_EQ(computed_model_tflop(flops, {-1, 3}), 4.875);
}

TEST(Worker, LooksTransientOnLibraryOutOfMemoryReports) {
  EXPECT_TRUE(looks_transient("CUDA out of memory. Tried to allocate 2.00 GiB"));
  EXPECT_TRUE(looks_transient("CUDA error: an illegal memory access was encountered"));
  EXPECT_FALSE(looks_transient("shape mismatch"));
}

}  // namespace
}  // namespace omnidp::runtime
