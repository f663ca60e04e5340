#include "omnidp/manifest/input_key.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "omnidp/manifest/manifest.hpp"
#include "request_shape.hpp"

namespace omnidp {
namespace {

// The fixed request of the format pin below.
Request fixed_request() {
  Request r = test::sized_request(9, 64, 96, 4, 5.5, 3.0);
  r.id = "fox-001";
  r.prompt = "a \"red\" fox \xE2\x80\x94 snow";  // an em dash: UTF-8 bytes stay raw
  r.negative_prompt = "blurry";
  r.seed = 7;
  r.task = Task::i2v;
  r.image = "/data/fox.png";
  r.image_sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
  r.fps = 16;
  return r;
}

TEST(InputKey, CanonicalEncodingIsPinned) {
  EXPECT_EQ(canonical_encoding(fixed_request(), "tiny-wan", "random:0"),
            "[\"omnidp-input-key-v1\",\"tiny-wan\",\"random:0\",\"i2v\","
            "\"a \\\"red\\\" fox \xE2\x80\x94 snow\",\"blurry\",7,9,64,96,4,5.5,3,"
            "\"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\",\"\"]");
}

// A last image (first-last-frame) appends its hash after every other field, only when given.
TEST(InputKey, ALastImageIsAppendedOnlyWhenGiven) {
  Request r = fixed_request();
  r.last_image = "/data/fox-end.png";
  r.last_image_sha256 = "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752";
  EXPECT_EQ(canonical_encoding(r, "tiny-wan", "random:0"),
            "[\"omnidp-input-key-v1\",\"tiny-wan\",\"random:0\",\"i2v\","
            "\"a \\\"red\\\" fox \xE2\x80\x94 snow\",\"blurry\",7,9,64,96,4,5.5,3,"
            "\"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\",\"\","
            "\"last_image\","
            "\"60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752\"]");
  r.last_image_sha256.clear();  // the path alone is not part of the key
  EXPECT_EQ(compute_input_key(r, "tiny-wan", "random:0"),
            compute_input_key(fixed_request(), "tiny-wan", "random:0"));
}

TEST(InputKey, ALinesStepCacheIsAppendedOnlyWhenGiven) {
  Request r = fixed_request();
  StepCacheConfig cache;
  cache.policy = CachePolicy::first_block;
  cache.threshold = 0.1;
  r.cache = cache;
  EXPECT_EQ(canonical_encoding(r, "tiny-wan", "random:0"),
            "[\"omnidp-input-key-v1\",\"tiny-wan\",\"random:0\",\"i2v\","
            "\"a \\\"red\\\" fox \xE2\x80\x94 snow\",\"blurry\",7,9,64,96,4,5.5,3,"
            "\"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\",\"\","
            "\"cache\",\"first_block(threshold 0.1)\"]");
  // A line that sets the cache off is another request than one that leaves it to the job.
  r.cache = StepCacheConfig{};
  const std::string off = compute_input_key(r, "tiny-wan", "random:0");
  EXPECT_NE(off, compute_input_key(fixed_request(), "tiny-wan", "random:0"));
  r.cache->policy = CachePolicy::taylorseer;
  EXPECT_NE(compute_input_key(r, "tiny-wan", "random:0"), off);
}

TEST(InputKey, KeyIsPinned) {
  // Computed independently:
  //   printf '%s' '["omnidp-input-key-v1","tiny-wan","random:0","i2v","a \"red\" fox — snow",
  //   "blurry",7,9,64,96,4,5.5,3,"9f86d0...0a08",""]' | sha256sum   (one line, no spaces)
  EXPECT_EQ(compute_input_key(fixed_request(), "tiny-wan", "random:0"),
            "880e49a747200c90e8343df9b804db7ec1b2f128d623af563abb127c01689597");
}

TEST(InputKey, StringEscapes) {
  Request r = fixed_request();
  r.prompt = std::string("q\"b\\n\nt\tr\rb\bf\fc\x01", 16) + std::string(1, '\x1f') + "\x7f";
  r.negative_prompt = "";
  const std::string encoding = canonical_encoding(r, "m", "w");
  EXPECT_NE(encoding.find(R"("q\"b\\n\nt\tr\rb\bf\fc\u0001\u001f)"
                          "\x7f\""),
            std::string::npos)
      << encoding;
}

TEST(InputKey, DoublesShortestRoundTrip) {
  Request r = fixed_request();
  r.guidance_scale = 0.1;
  r.flow_shift = 1e22;
  EXPECT_NE(canonical_encoding(r, "m", "w").find(",0.1,1e+22,"), std::string::npos);
  r.guidance_scale = -0.0;
  Request zero = r;
  zero.guidance_scale = 0.0;
  EXPECT_EQ(canonical_encoding(r, "m", "w"), canonical_encoding(zero, "m", "w"));
  EXPECT_NE(canonical_encoding(r, "m", "w").find(",0,1e+22,"), std::string::npos);
}

TEST(InputKey, SameRequestSameKey) {
  EXPECT_EQ(compute_input_key(fixed_request(), "tiny-wan", "random:0"),
            compute_input_key(fixed_request(), "tiny-wan", "random:0"));
}

TEST(InputKey, EveryDeterminingFieldChangesTheKey) {
  const std::vector<std::function<void(Request&, std::string&, std::string&)>> changes{
      [](Request&, std::string& model, std::string&) { model = "wan2.2-ti2v-5b"; },
      [](Request&, std::string&, std::string& weights) { weights = "random:1"; },
      [](Request& r, std::string&, std::string&) { r.task = Task::t2v; },
      [](Request& r, std::string&, std::string&) { r.prompt += " "; },
      [](Request& r, std::string&, std::string&) { r.negative_prompt = "blurry, dark"; },
      [](Request& r, std::string&, std::string&) { r.seed = 8; },
      [](Request& r, std::string&, std::string&) { r.num_frames = 13; },
      [](Request& r, std::string&, std::string&) { r.height = 80; },
      [](Request& r, std::string&, std::string&) { r.width = 80; },
      [](Request& r, std::string&, std::string&) { r.num_inference_steps = 5; },
      [](Request& r, std::string&, std::string&) { r.guidance_scale = 5.500000000000001; },
      [](Request& r, std::string&, std::string&) { r.flow_shift = 3.5; },
      [](Request& r, std::string&, std::string&) { r.image_sha256[0] = 'a'; },
      [](Request& r, std::string&, std::string&) { r.prompt_embeds_sha256 = "00"; },
      [](Request& r, std::string&, std::string&) { r.last_image_sha256 = "00"; },
      // Moving text between neighbouring fields must not collide.
      [](Request& r, std::string&, std::string&) {
        r.prompt = "a \"red\" fox \xE2\x80\x94 snowblurry";
        r.negative_prompt = "";
      },
  };
  std::set<std::string> keys{compute_input_key(fixed_request(), "tiny-wan", "random:0")};
  for (std::size_t i = 0; i < changes.size(); ++i) {
    Request r = fixed_request();
    std::string model = "tiny-wan";
    std::string weights = "random:0";
    changes[i](r, model, weights);
    EXPECT_TRUE(keys.insert(compute_input_key(r, model, weights)).second) << "change " << i;
  }
}

TEST(InputKey, IdPathsFpsAndPositionAreNotPartOfIt) {
  Request r = fixed_request();
  r.id = "another";
  r.image = "/elsewhere/fox.png";
  r.fps = 30;
  r.line = 99;
  r.index = 42;
  EXPECT_EQ(compute_input_key(r, "tiny-wan", "random:0"),
            compute_input_key(fixed_request(), "tiny-wan", "random:0"));
}

TEST(InputKey, IndependentOfKeyOrderAndWhitespace) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("omnidp_input_key_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::vector<std::string> lines{
      R"({"id":"a","prompt":"fox","seed":7,"num_frames":9,"guidance_scale":5.5})",
      R"(  { "guidance_scale" : 5.50, "num_frames": 9 ,"seed":7, "prompt" : "fox", "id":"b" }  )",
      "{\"seed\":\t7,\"prompt\":\"f\\u006fx\",\"guidance_scale\":55e-1,\"id\":\"c\",\"num_frames\":"
      "9}",
  };
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto path = (dir / std::to_string(i)).replace_extension(".jsonl");
    std::ofstream(path, std::ios::binary) << lines[i] << "\n";
    ManifestOptions options;
    options.path = path;
    options.model_name = "tiny-wan";
    options.weights_identity = "random:0";
    options.defaults.flow_shift = 5.0;  // what job_manifest_options resolves
    ManifestReader reader(options);
    const auto request = reader.next();
    ASSERT_TRUE(request.has_value());
    keys.push_back(request->input_key);
  }
  std::filesystem::remove_all(dir);
  ASSERT_EQ(keys.size(), 3U);
  EXPECT_EQ(keys[0].size(), 64U);
  EXPECT_EQ(keys[0], keys[1]);
  EXPECT_EQ(keys[0], keys[2]);
}

}  // namespace
}  // namespace omnidp
