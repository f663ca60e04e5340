// The writer actor alone: the sink opened once the model loaded, each row hashed and written
// before its Done, a broken sink giving every later request back.
#include "omnidp/runtime/writer.hpp"

#include <gtest/gtest.h>

#include "actor_test_support.hpp"
#include "job_test_support.hpp"

namespace omnidp::runtime {
namespace {

using testing::ActorHarness;
using testing::MemoryResults;
using testing::MemorySink;

Video small_video() {
  Video v;
  v.frames = 1;
  v.height = 2;
  v.width = 2;
  v.data = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  return v;
}

WriteJob job(const std::string& id, RequestStatus status) {
  WriteJob j;
  j.record.id = id;
  j.record.status = status;
  j.record.error = status == RequestStatus::ok ? "" : "it failed";
  j.record.attempt = 2;
  j.record.start_time = 10.0;
  j.record.end_time = 12.5;
  j.record.seconds = 2.5;
  if (status == RequestStatus::ok) j.video = small_video();
  return j;
}

JobOptions memory_job(const std::shared_ptr<MemoryResults>& results) {
  JobOptions o;
  o.config.model.name = "synthetic";
  o.make_sink = [results](const SinkInfo& info) -> std::unique_ptr<ResultSink> {
    EXPECT_EQ(info.device, "cpu-test");
    EXPECT_EQ(info.host, "test-host");
    EXPECT_EQ(info.model, "synthetic");
    return std::make_unique<MemorySink>(results, info.rank);
  };
  return o;
}

// Runs the writer over the model's OpenCmd, `jobs` and the end of its mailbox; its events.
std::vector<LocalEvent> write_all(ActorHarness& h, std::vector<WriteJob> jobs) {
  h.context->writes.push(OpenCmd{"cpu-test"});
  for (auto& j : jobs) h.context->writes.push(std::move(j));
  h.context->writes.close();
  Writer(*h.context).run();
  return h.events();
}

TEST(Writer, WritesEachHashedRowBeforeItsDone) {
  auto results = std::make_shared<MemoryResults>();
  ActorHarness h(memory_job(results));
  WriteJob a = job("a", RequestStatus::ok);
  a.record.model_tflop = 1.75;  // the Done carries the row's MFU and step cache counts
  a.record.forwards = 40;
  a.record.forwards_computed = 10;
  const auto events = write_all(h, {std::move(a), job("b", RequestStatus::failed)});
  ASSERT_EQ(events.size(), 4U);
  EXPECT_EQ(std::get<Opened>(events[0]).error, nullptr);
  EXPECT_EQ(std::get<DoneMsg>(std::get<OutMsg>(events[1]).message),
            (DoneMsg{"a", RequestStatus::ok, "", 0, 0, 2, 10.0, 12.5, 2.5, 1.75, 40, 10}));
  EXPECT_EQ(std::get<DoneMsg>(std::get<OutMsg>(events[2]).message),
            (DoneMsg{"b", RequestStatus::failed, "it failed", 0, 0, 2, 10.0, 12.5, 2.5}));
  EXPECT_TRUE(std::holds_alternative<WriterClosed>(events[3]));
  ASSERT_EQ(results->rows.size(), 2U);
  EXPECT_EQ(results->rows[0].video_sha256, video_sha256(small_video()));
  EXPECT_EQ(results->sha_of_video.at("a"), video_sha256(small_video()));
  EXPECT_EQ(results->rows[1].video_sha256, "");
  EXPECT_EQ(results->sha_of_video.count("b"), 0U);
  EXPECT_EQ(results->closed, std::vector<int>{0});
}

TEST(Writer, ASinkThatCannotOpenGivesEveryRequestBack) {
  JobOptions o;
  o.config.model.name = "synthetic";
  o.make_sink = [](const SinkInfo&) -> std::unique_ptr<ResultSink> {
    throw IoError("/out/rank-00000.h5", "read-only file system");
  };
  ActorHarness h(o);
  const auto events = write_all(h, {job("a", RequestStatus::ok)});
  ASSERT_EQ(events.size(), 3U);
  const auto& opened = std::get<Opened>(events[0]);
  ASSERT_NE(opened.error, nullptr);
  EXPECT_EQ(error_info(opened.error).kind, ErrorKind::io);
  EXPECT_EQ(std::get<ReturnedMsg>(std::get<OutMsg>(events[1]).message), (ReturnedMsg{0, {"a"}}));
  EXPECT_TRUE(std::holds_alternative<WriterClosed>(events[2]));
}

class FailingSink final : public ResultSink {
 public:
  explicit FailingSink(int* closes) : closes_(closes) {}
  void write(const ResultRecord& record, const Video*) override {
    throw IoError("rank-00000.h5", "disk full writing " + record.id);
  }
  void close() override { ++*closes_; }

 private:
  int* closes_;
};

TEST(Writer, AFailedWriteIsReportedOnceAndLaterRowsGoBack) {
  int closes = 0;
  JobOptions o;
  o.config.model.name = "synthetic";
  o.make_sink = [&closes](const SinkInfo&) -> std::unique_ptr<ResultSink> {
    return std::make_unique<FailingSink>(&closes);
  };
  ActorHarness h(o);
  const auto events = write_all(h, {job("a", RequestStatus::ok), job("b", RequestStatus::ok)});
  ASSERT_EQ(events.size(), 5U);
  EXPECT_EQ(std::get<Opened>(events[0]).error, nullptr);
  EXPECT_EQ(std::get<WriterFailed>(events[1]).error,
            error_info(std::make_exception_ptr(IoError("rank-00000.h5", "disk full writing a"))));
  EXPECT_EQ(std::get<ReturnedMsg>(std::get<OutMsg>(events[2]).message), (ReturnedMsg{0, {"a"}}));
  EXPECT_EQ(std::get<ReturnedMsg>(std::get<OutMsg>(events[3]).message), (ReturnedMsg{0, {"b"}}));
  EXPECT_TRUE(std::holds_alternative<WriterClosed>(events[4]));
  EXPECT_EQ(closes, 0);  // a broken sink is not closed
}

TEST(Writer, ClosedBeforeTheModelLoadedOpensNothing) {
  auto results = std::make_shared<MemoryResults>();
  ActorHarness h(memory_job(results));
  h.context->writes.close();
  Writer(*h.context).run();

  const auto events = h.events();
  ASSERT_EQ(events.size(), 1U);
  EXPECT_TRUE(std::holds_alternative<WriterClosed>(events[0]));
  EXPECT_TRUE(results->opened.empty());
}

}  // namespace
}  // namespace omnidp::runtime
