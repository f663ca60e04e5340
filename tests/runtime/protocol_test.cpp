#include "omnidp/runtime/protocol.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace omnidp::runtime {
namespace {

Request sample_request() {
  Request r;
  r.id = "cat/001 \xc3\xa9";
  r.prompt = "a cat\non a mat";
  r.negative_prompt = "blurry";
  r.seed = (1ULL << 63) - 1;
  r.task = Task::i2v;
  r.image = "/data/img/cat.png";
  r.image_sha256 = std::string(64, 'a');
  r.last_image = "/data/img/cat-end.png";
  r.last_image_sha256 = std::string(64, 'd');
  r.prompt_embeds = "/data/emb.safetensors";
  r.prompt_embeds_sha256 = std::string(64, 'b');
  r.num_frames = 121;
  r.height = 480;
  r.width = 848;
  r.num_inference_steps = 50;
  r.guidance_scale = 6.5;
  r.flow_shift = -0.0;
  r.fps = 24;
  StepCacheConfig cache;
  cache.policy = CachePolicy::magcache;
  cache.threshold = 0.125;
  cache.max_skip_steps = 4;
  cache.retention_ratio = 0.25;
  cache.mag_ratios = {1.0, 0.99, 0.875};
  r.cache = cache;
  r.lora = {LoraAdapter{.path = "/l/a.safetensors",
                        .scale = -0.5,
                        .expert = std::nullopt,
                        .sha256 = std::string(64, 'd')},
            LoraAdapter{.path = "/l/b_LOW.safetensors",
                        .scale = 1.0,
                        .expert = LoraExpert::low_noise,
                        .sha256 = {}}};
  r.line = 12345;
  r.index = 9876543210ULL;
  r.input_key = std::string(64, 'c');
  r.input_error = "missing image";
  return r;
}

template <class T>
T round_trip(const T& m) {
  const auto bytes = encode(Message{m});
  const Message back = decode(bytes);
  EXPECT_TRUE(std::holds_alternative<T>(back)) << message_name(back);
  return std::get<T>(back);
}

TEST(Protocol, EveryMessageRoundTrips) {
  EXPECT_EQ(round_trip(StartMsg{42}), StartMsg{42});
  const ReadyMsg ready{3, 2, "cuda:3 (NVIDIA H200)", false, ErrorInfo{ErrorKind::weights, "bad"}};
  EXPECT_EQ(round_trip(ready), ready);
  const DoneMsg done{"id-1", RequestStatus::failed, "boom", 5, 2, 3, 1.7e9, 1.7e9 + 3.25, 3.25};
  EXPECT_EQ(round_trip(done), done);
  const DoneMsg cached{"id-3", RequestStatus::ok, "",  1,    1,  1,
                       1.7e9,  1.7e9 + 2.5,       2.5, 1.25, 60, 20};
  EXPECT_EQ(round_trip(cached), cached);
  EXPECT_EQ(round_trip(cached).forwards, 60);
  EXPECT_EQ(round_trip(cached).forwards_computed, 20);
  const RetryMsg retry{"id-2", 1, 1, "CUDA out of memory", 0.5};
  EXPECT_EQ(round_trip(retry), retry);
  const ReturnedMsg returned{4, {"a", "", "c/d"}};
  EXPECT_EQ(round_trip(returned), returned);
  EXPECT_EQ(round_trip(DrainMsg{true}), DrainMsg{true});
  EXPECT_EQ(round_trip(DrainMsg{false}), DrainMsg{false});
  EXPECT_EQ(round_trip(SignalMsg{2, 10}), (SignalMsg{2, 10}));
  const HeartbeatMsg hb{7, "running", 12.5, 100.25};
  EXPECT_EQ(round_trip(hb), hb);
  const FatalMsg fatal{ErrorInfo{ErrorKind::hdf5, "H5Dwrite failed"}};
  EXPECT_EQ(round_trip(fatal), fatal);
  EXPECT_EQ(round_trip(ShutdownMsg{}), ShutdownMsg{});
  EXPECT_EQ(round_trip(ClosedMsg{9.5}), ClosedMsg{9.5});
  const FinishMsg finish{2, true, ErrorInfo{ErrorKind::manifest, "m.jsonl:3:seed: not an integer"}};
  EXPECT_EQ(round_trip(finish), finish);
  GroupRunMsg run;
  run.request.id = "x";
  run.request.seed = 12;
  run.attempt = 2;
  const auto run_back = round_trip(run);
  EXPECT_EQ(run_back.request.id, "x");
  EXPECT_EQ(run_back.request.seed, 12U);
  EXPECT_EQ(run_back.attempt, 2);
  EXPECT_EQ(round_trip(GroupIdleMsg{"x"}), GroupIdleMsg{"x"});
  EXPECT_EQ(round_trip(GeneratedMsg{"y"}), GeneratedMsg{"y"});
  EXPECT_EQ(round_trip(PullMsg{3, "z"}), (PullMsg{3, "z"}));
  EXPECT_TRUE(for_coordinator(Message{GeneratedMsg{}}));
  EXPECT_FALSE(for_coordinator(Message{AssignMsg{}}));
}

TEST(Protocol, AssignCarriesEveryRequestField) {
  const Request r = sample_request();
  const AssignMsg back = round_trip(AssignMsg{r, 2});
  EXPECT_EQ(back.attempt, 2);
  const Request& b = back.request;
  EXPECT_EQ(b.id, r.id);
  EXPECT_EQ(b.prompt, r.prompt);
  EXPECT_EQ(b.negative_prompt, r.negative_prompt);
  EXPECT_EQ(b.seed, r.seed);
  EXPECT_EQ(b.task, r.task);
  EXPECT_EQ(b.image, r.image);
  EXPECT_EQ(b.image_sha256, r.image_sha256);
  EXPECT_EQ(b.last_image, r.last_image);
  EXPECT_EQ(b.last_image_sha256, r.last_image_sha256);
  EXPECT_EQ(b.prompt_embeds, r.prompt_embeds);
  EXPECT_EQ(b.prompt_embeds_sha256, r.prompt_embeds_sha256);
  EXPECT_EQ(b.num_frames, r.num_frames);
  EXPECT_EQ(b.height, r.height);
  EXPECT_EQ(b.width, r.width);
  EXPECT_EQ(b.num_inference_steps, r.num_inference_steps);
  EXPECT_EQ(b.guidance_scale, r.guidance_scale);
  EXPECT_TRUE(std::signbit(b.flow_shift));
  EXPECT_EQ(b.fps, r.fps);
  EXPECT_EQ(b.cache, r.cache);  // every StepCacheConfig field (defaulted ==)
  EXPECT_FALSE(round_trip(AssignMsg{Request{}, 1}).request.cache.has_value());
  EXPECT_EQ(b.lora, r.lora);  // path, scale, expert (set or not), sha256
  EXPECT_TRUE(round_trip(AssignMsg{Request{}, 1}).request.lora.empty());
  EXPECT_EQ(b.line, r.line);
  EXPECT_EQ(b.index, r.index);
  EXPECT_EQ(b.input_key, r.input_key);
  EXPECT_EQ(b.input_error, r.input_error);
}

TEST(Protocol, EncodingIsCompactAndLittleEndian) {
  EXPECT_EQ(encode(Message{StartMsg{0x0102030405060708ULL}}),
            (std::vector<std::uint8_t>{1, 8, 7, 6, 5, 4, 3, 2, 1}));
  EXPECT_EQ(encode(Message{GroupIdleMsg{"ab"}}),
            (std::vector<std::uint8_t>{15, 2, 0, 0, 0, 'a', 'b'}));
}

TEST(Protocol, RejectsMalformedBytes) {
  auto bytes = encode(Message{DoneMsg{"abc", RequestStatus::ok, "", 0, 0, 1, 0, 0, 0}});
  auto truncated = bytes;
  truncated.pop_back();
  try {
    (void)decode(truncated);
    FAIL() << "no error";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("protocol: truncated message"), std::string::npos)
        << e.what();
  }
  auto trailing = bytes;
  trailing.push_back(0);
  try {
    (void)decode(trailing);
    FAIL() << "no error";
  } catch (const RuntimeError& e) {
    EXPECT_STREQ(e.what(), "protocol: 1 trailing bytes after the message");
  }
  try {
    (void)decode(std::vector<std::uint8_t>{200});
    FAIL() << "no error";
  } catch (const RuntimeError& e) {
    EXPECT_STREQ(e.what(), "protocol: unknown message type 200");
  }
  EXPECT_THROW((void)decode(std::vector<std::uint8_t>{}), RuntimeError);
  // A string length larger than the message.
  EXPECT_THROW((void)decode(std::vector<std::uint8_t>{15, 255, 255, 255, 255}), RuntimeError);
  // An invalid boolean.
  EXPECT_THROW((void)decode(std::vector<std::uint8_t>{7, 2}), RuntimeError);
}

TEST(Protocol, MessageNames) {
  EXPECT_STREQ(message_name(Message{AssignMsg{}}), "Assign");
  EXPECT_STREQ(message_name(Message{GroupIdleMsg{}}), "GroupIdle");
}

}  // namespace
}  // namespace omnidp::runtime
