#include "omnidp/manifest/manifest.hpp"

#include <gtest/gtest.h>
#include <png.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "error_of.hpp"
#include "manifest_test_support.hpp"
#include "omnidp/common/sha256.hpp"
#include "omnidp/manifest/input_key.hpp"
#include "png_file.hpp"
#include "temp_dir.hpp"

namespace omnidp {
namespace {

namespace fs = std::filesystem;

void write_file(const fs::path& path, const std::string& content) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out << content;
  ASSERT_TRUE(out.good()) << path;
}

void write_png(const fs::path& path, std::uint8_t shade) {
  fs::create_directories(path.parent_path());
  const std::vector<std::uint8_t> pixels(4 * 4 * 3, shade);
  ASSERT_TRUE(omnidp::test::write_rgb_png(path, 4, 4, pixels)) << path;
}

// A PNG signature and IHDR claiming width x height, and nothing else.
void write_png_header(const fs::path& path, png_uint_32 width, png_uint_32 height) {
  fs::create_directories(path.parent_path());
  ASSERT_TRUE(omnidp::test::write_png_header(path, width, height)) << path;
}

using omnidp::test::manifest_error_of;
using omnidp::test::test_defaults;

class ManifestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(tmp_.path() / "job");
    base_ = fs::canonical(tmp_.path());
    dir_ = base_ / "job";
    manifest_ = dir_ / "m.jsonl";
    file_ = manifest_.string();
  }

  [[nodiscard]] ManifestOptions options() const {
    ManifestOptions o;
    o.path = manifest_;
    o.defaults = test_defaults();
    o.model_name = "tiny-wan";
    o.weights_identity = "random:0";
    return o;
  }

  // Reads the whole manifest with `o`.
  static std::vector<Request> read_all(const ManifestOptions& o) {
    ManifestReader reader(o);
    std::vector<Request> out;
    while (auto r = reader.next()) out.push_back(std::move(*r));
    return out;
  }

  std::vector<Request> read_all() const { return read_all(options()); }

  // The message of the first ManifestError while reading `content` as the manifest.
  std::string error_of(const std::string& content) const {
    write_file(manifest_, content);
    return manifest_error_of([&] { (void)read_all(); });
  }

  // The same for a one-line manifest.
  std::string line_error(const std::string& line) const { return error_of(line + "\n"); }

  omnidp::test::TempDir tmp_;
  fs::path base_;
  fs::path dir_;
  fs::path manifest_;
  std::string file_;
};

TEST_F(ManifestTest, DefaultsFillAbsentFields) {
  write_file(manifest_, R"({"id":"a","prompt":"a fox"})"
                        "\n");
  const auto requests = read_all();
  ASSERT_EQ(requests.size(), 1U);
  const Request& r = requests[0];
  EXPECT_EQ(r.id, "a");
  EXPECT_EQ(r.prompt, "a fox");
  EXPECT_EQ(r.negative_prompt, "low quality");
  EXPECT_EQ(r.seed, 42U);
  EXPECT_EQ(r.task, Task::t2v);
  EXPECT_EQ(r.num_frames, 9);
  EXPECT_EQ(r.height, 64);
  EXPECT_EQ(r.width, 96);
  EXPECT_EQ(r.num_inference_steps, 4);
  EXPECT_EQ(r.guidance_scale, 5.0);
  EXPECT_EQ(r.flow_shift, 3.0);
  EXPECT_EQ(r.fps, 16);
  EXPECT_EQ(r.line, 1U);
  EXPECT_EQ(r.index, 0U);
  EXPECT_TRUE(r.image.empty());
  EXPECT_TRUE(r.image_sha256.empty());
  EXPECT_TRUE(r.input_error.empty());
  EXPECT_EQ(r.input_key, compute_input_key(r, "tiny-wan", "random:0"));
}

TEST_F(ManifestTest, EveryFieldOverrides) {
  write_png(dir_ / "img" / "cat.png", 7);
  write_file(dir_ / "emb" / "cat.bin", "embedding bytes");
  write_file(manifest_,
             R"({"id":"cat-001","prompt":"a cat","negative_prompt":"","seed":7,"task":"i2v",)"
             R"("image":"img/cat.png","prompt_embeds":"emb/cat.bin","num_frames":33,)"
             R"("height":480,"width":832,"num_inference_steps":30,"guidance_scale":5,)"
             R"("flow_shift":7.5,"fps":24})"
             "\n");
  const auto requests = read_all();
  ASSERT_EQ(requests.size(), 1U);
  const Request& r = requests[0];
  EXPECT_EQ(r.id, "cat-001");
  EXPECT_EQ(r.negative_prompt, "");
  EXPECT_EQ(r.seed, 7U);
  EXPECT_EQ(r.task, Task::i2v);
  EXPECT_EQ(r.image, (dir_ / "img" / "cat.png").string());
  EXPECT_EQ(r.image_sha256, sha256_file_hex(dir_ / "img" / "cat.png"));
  EXPECT_EQ(r.prompt_embeds, (dir_ / "emb" / "cat.bin").string());
  EXPECT_EQ(r.prompt_embeds_sha256, sha256_hex(std::string_view("embedding bytes")));
  EXPECT_EQ(r.num_frames, 33);
  EXPECT_EQ(r.height, 480);
  EXPECT_EQ(r.width, 832);
  EXPECT_EQ(r.num_inference_steps, 30);
  EXPECT_EQ(r.guidance_scale, 5.0);
  EXPECT_EQ(r.flow_shift, 7.5);
  EXPECT_EQ(r.fps, 24);
  EXPECT_TRUE(r.input_error.empty());
  EXPECT_EQ(r.input_key, compute_input_key(r, "tiny-wan", "random:0"));
}

// guidance_scale_2 (the low-noise expert's, Wan2.2-A14B): a line's or the default; part of the
// input key only when set; refused where the model has one transformer.
TEST_F(ManifestTest, GuidanceScale2IsTheLowNoiseExpertsAndOnlyTwoExpertModelsTakeIt) {
  write_file(manifest_, R"({"id":"a","prompt":"p","guidance_scale_2":3})"
                        "\n"
                        R"({"id":"b","prompt":"p"})"
                        "\n");
  auto o = options();
  auto requests = read_all(o);
  ASSERT_EQ(requests.size(), 2U);
  EXPECT_EQ(requests[0].guidance_scale_2, 3.0);
  EXPECT_EQ(requests[1].guidance_scale_2, std::nullopt);
  Request same = requests[0];
  same.guidance_scale_2.reset();
  EXPECT_NE(requests[0].input_key, compute_input_key(same, "tiny-wan", "random:0"));
  same.id = "b";
  same.line = requests[1].line;
  same.index = requests[1].index;
  EXPECT_EQ(requests[1].input_key, compute_input_key(same, "tiny-wan", "random:0"));
  o.defaults.guidance_scale_2 = 2.5;
  EXPECT_EQ(read_all(o).at(1).guidance_scale_2, 2.5);
  o.guidance_scale_2 = false;
  o.defaults.guidance_scale_2.reset();
  EXPECT_EQ(manifest_error_of([&] { (void)read_all(o); }),
            file_ +
                ":1:guidance_scale_2: the model has one transformer (guidance_scale_2 is the "
                "low-noise expert's guidance of a two-expert model, Wan2.2-A14B)");
  EXPECT_NE(
      line_error(R"({"id":"a","prompt":"p","guidance_scale_2":500})").find(":1:guidance_scale_2:"),
      std::string::npos);
}

// "lora": paths against the manifest's folder, each file hashed into the input key with its
// scale and expert; a line without one keeps its key; every bad adapter is a ManifestError
// naming the line and item (no request runs with it).
TEST_F(ManifestTest, ALinesLoraAdaptersAreResolvedHashedAndPartOfTheInputKey) {
  write_file(dir_ / "style.safetensors", "style bytes");
  write_file(dir_ / "fast_HIGH.safetensors", "high bytes");
  write_file(manifest_,
             R"({"id":"a","prompt":"p","lora":["style.safetensors"]})"
             "\n"
             R"({"id":"b","prompt":"p","lora":[{"path":"style.safetensors","scale":0.5}]})"
             "\n"
             R"({"id":"c","prompt":"p"})"
             "\n"
             R"({"id":"d","prompt":"p","lora":[{"path":"fast_HIGH.safetensors"},"style.safetensors"]})"
             "\n");
  auto o = options();
  std::vector<std::string> checked;
  o.lora_problem = [&](const LoraAdapter& a) {
    checked.push_back(fs::path(a.path).filename().string());
    return std::string();
  };
  const auto requests = read_all(o);
  ASSERT_EQ(requests.size(), 4U);
  ASSERT_EQ(requests[0].lora.size(), 1U);
  EXPECT_EQ(requests[0].lora[0].path, (dir_ / "style.safetensors").string());
  EXPECT_EQ(requests[0].lora[0].sha256, sha256_file_hex(dir_ / "style.safetensors"));
  EXPECT_NE(requests[0].input_key, requests[1].input_key);  // another scale
  Request plain = requests[0];
  plain.lora.clear();
  EXPECT_NE(requests[0].input_key, compute_input_key(plain, "tiny-wan", "random:0"));
  plain.id = "c";
  plain.line = requests[2].line;
  plain.index = requests[2].index;
  EXPECT_EQ(requests[2].input_key, compute_input_key(plain, "tiny-wan", "random:0"));
  // Each distinct file is checked against the model once.
  EXPECT_EQ(checked, (std::vector<std::string>{"style.safetensors", "fast_HIGH.safetensors"}));

  // A file the model check refuses, a missing file, a folder, an expert of a one-expert model,
  // a model that takes no adapters.
  o.lora_problem = [](const LoraAdapter&) { return std::string("2 part(s) do not fit"); };
  EXPECT_EQ(manifest_error_of([&] { (void)read_all(o); }),
            file_ + ":1:lora[0].path: " + (dir_ / "style.safetensors").string() +
                ": 2 part(s) do not fit");
  o.lora_problem = {};
  o.guidance_scale_2 = false;
  EXPECT_EQ(manifest_error_of([&] { (void)read_all(o); }), "");
  write_file(manifest_,
             R"({"id":"a","prompt":"p","lora":[{"path":"fast_HIGH.safetensors","expert":"high_noise"}]})"
             "\n");
  EXPECT_EQ(manifest_error_of([&] { (void)read_all(o); }),
            file_ +
                ":1:lora[0].expert: high_noise: this model has one transformer (an expert is "
                "chosen only on "
                "a two-expert model such as Wan2.2-A14B)");
  o.lora = false;
  EXPECT_EQ(
      manifest_error_of([&] { (void)read_all(o); }),
      file_ + ":1:lora: the model takes no LoRA adapters (the Wan family and hunyuanvideo-1.5 do)");
  EXPECT_EQ(line_error(R"({"id":"a","prompt":"p","lora":["gone.safetensors"]})"),
            file_ + ":1:lora[0].path: " + (dir_ / "gone.safetensors").string() + ": file not found");
  fs::create_directories(dir_ / "folder.safetensors");
  EXPECT_NE(
      line_error(R"({"id":"a","prompt":"p","lora":["folder.safetensors"]})").find(":1:lora[0].path: "),
      std::string::npos);
  EXPECT_EQ(
      line_error(R"({"id":"a","prompt":"p","lora":"style.safetensors"})"),
      file_ +
          ":1:lora: must be a list of adapters, each a path or {\"path\": ..., \"scale\": ..., "
          "\"expert\": ...}, got the string \"style.safetensors\"");
  EXPECT_EQ(
      line_error(R"({"id":"a","prompt":"p","lora":[{"path":"style.safetensors","scale":"x"}]})"),
      file_ + ":1:lora[0].scale: 'x' is not a finite number");
}

// last_image (first-last-frame to video): a path as image's, hashed into the input key only
// when given; it needs an image; refused where the model takes none, required where its
// transformer is first-last-frame.
TEST_F(ManifestTest, ALastImageIsTheLastFrameOfAnImageToVideoLine) {
  write_png(dir_ / "img" / "first.png", 7);
  write_png(dir_ / "img" / "last.png", 9);
  write_png(dir_ / "img" / "other.png", 11);
  write_file(manifest_,
             R"({"id":"a","prompt":"p","image":"img/first.png","last_image":"img/last.png"})"
             "\n"
             R"({"id":"b","prompt":"p","image":"img/first.png"})"
             "\n"
             R"({"id":"c","prompt":"p","image":"img/first.png","last_image":"img/other.png"})"
             "\n");
  auto o = options();
  const auto requests = read_all(o);
  ASSERT_EQ(requests.size(), 3U);
  EXPECT_EQ(requests[0].last_image, (dir_ / "img" / "last.png").string());
  EXPECT_EQ(requests[0].last_image_sha256, sha256_file_hex(dir_ / "img" / "last.png"));
  EXPECT_TRUE(requests[1].last_image.empty());
  EXPECT_TRUE(requests[1].last_image_sha256.empty());
  EXPECT_NE(requests[0].input_key, requests[2].input_key);
  // Without it, the key is the one of a line that never had the field.
  Request without = requests[0];
  without.last_image.clear();
  without.last_image_sha256.clear();
  EXPECT_NE(requests[0].input_key, compute_input_key(without, "tiny-wan", "random:0"));
  without.id = "b";
  EXPECT_EQ(requests[1].input_key, compute_input_key(without, "tiny-wan", "random:0"));

  o.last_image = false;
  EXPECT_EQ(manifest_error_of([&] { (void)read_all(o); }),
            file_ +
                ":1:last_image: the model takes no last image (first-last-frame to video: "
                "Wan2.2-I2V-A14B and the Wan2.1-FLF2V checkpoints)");
  o.last_image = true;
  o.requires_last_image = true;
  EXPECT_EQ(manifest_error_of([&] { (void)read_all(o); }),
            file_ +
                ":2:task: the snapshot is first-last-frame to video (its transformer's "
                "pos_embed_seq_len): an i2v line needs \"last_image\"");
  EXPECT_EQ(line_error(R"({"id":"a","prompt":"p","last_image":"img/last.png"})"),
            file_ +
                ":1:last_image: needs an \"image\" (first-last-frame to video: image is "
                "the first frame)");
  EXPECT_EQ(line_error(R"({"id":"a","prompt":"p","image":"img/first.png","last_image":""})"),
            file_ + ":1:last_image: must not be empty");
  EXPECT_NE(line_error(R"({"id":"a","prompt":"p","image":"img/first.png","last_image":"../x.png"})")
                .find(":1:last_image: "),
            std::string::npos);
}

// A last image that cannot be read fails its request alone, naming the field.
TEST_F(ManifestTest, AnUnreadableLastImageFailsItsRequest) {
  write_png(dir_ / "img" / "first.png", 7);
  write_file(dir_ / "img" / "broken.png", "not a png");
  write_file(manifest_,
             R"({"id":"a","prompt":"p","image":"img/first.png","last_image":"img/broken.png"})"
             "\n");
  const auto requests = read_all();
  ASSERT_EQ(requests.size(), 1U);
  EXPECT_EQ(requests[0].input_error.rfind(file_ + ":1:last_image: ", 0), 0U)
      << requests[0].input_error;
  EXPECT_TRUE(requests[0].input_key.empty());
}

TEST_F(ManifestTest, TaskRules) {
  write_png(dir_ / "img" / "cat.png", 7);
  write_file(manifest_, R"({"id":"a","prompt":"p","image":"img/cat.png"})"
                        "\n");
  EXPECT_EQ(read_all().at(0).task, Task::i2v);
  EXPECT_EQ(line_error(R"({"id":"a","prompt":"p","task":"i2v"})"),
            file_ + ":1:task: task i2v needs an \"image\"");
  EXPECT_EQ(line_error(R"({"id":"a","prompt":"p","task":"t2v","image":"img/cat.png"})"),
            file_ + ":1:image: given for a t2v request (drop it, or use \"task\": \"i2v\")");
  EXPECT_EQ(line_error(R"({"id":"a","prompt":"p","task":"t2V"})"),
            file_ + ":1:task: unknown task \"t2V\" (did you mean 't2v'?)");
  EXPECT_EQ(line_error(R"({"id":"a","prompt":"p","image":""})"),
            file_ + ":1:image: must not be empty");
}

TEST_F(ManifestTest, BlankCommentLinesCrlfAndBom) {
  write_file(manifest_,
             "\xEF\xBB\xBF# a comment\r\n"
             "\r\n"
             "   \r\n"
             "  # an indented comment\r\n"
             "{\"id\":\"a\",\"prompt\":\"p\"}\r\n"
             "\t\n"
             "{\"id\":\"b\",\"prompt\":\"q\"}");  // no line end at the end of the file
  ManifestReader reader(options());
  const auto a = reader.next();
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->id, "a");
  EXPECT_EQ(a->prompt, "p");
  EXPECT_EQ(a->line, 5U);
  EXPECT_EQ(a->index, 0U);
  const auto b = reader.next();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->prompt, "q");
  EXPECT_EQ(b->line, 7U);
  EXPECT_EQ(b->index, 1U);
  EXPECT_FALSE(reader.next().has_value());
  EXPECT_EQ(reader.line(), 7U);
  EXPECT_EQ(reader.requests(), 2U);
}

TEST_F(ManifestTest, Utf8PromptsArePreserved) {
  const std::string prompt =
      "Ein Fuchs im Schnee \xE2\x80\x94 \xE9\x9B\xAA\xE3\x81\xAE\xE4\xB8\xAD "
      "\xF0\x9F\xA6\x8A caf\xC3\xA9";
  write_file(manifest_, "{\"id\":\"\xE9\x9B\xAA\",\"prompt\":\"" + prompt +
                            "\",\"negative_prompt\":\"caf\\u00e9 \\ud83e\\udd8a\"}\n");
  const auto requests = read_all();
  ASSERT_EQ(requests.size(), 1U);
  EXPECT_EQ(requests[0].id, "\xE9\x9B\xAA");
  EXPECT_EQ(requests[0].prompt, prompt);
  EXPECT_EQ(requests[0].negative_prompt, "caf\xC3\xA9 \xF0\x9F\xA6\x8A");
}

TEST_F(ManifestTest, InvalidUtf8NamesTheField) {
  EXPECT_EQ(line_error("{\"id\":\"a\",\"prompt\":\"bad \xFF byte\"}"),
            file_ + ":1:prompt: invalid UTF-8 in the value");
  EXPECT_EQ(line_error("{\"id\":\"a\",\"prompt\":\"p\",\"negative_prompt\":\"cut \xC3\"}"),
            file_ + ":1:negative_prompt: invalid UTF-8 in the value");
  EXPECT_EQ(line_error("{\"id\":\"a\",\"prompt\":\"overlong \xC0\xAF\"}"),
            file_ + ":1:prompt: invalid UTF-8 in the value");
  EXPECT_EQ(line_error("{\"id\":\"a\",\"prompt\":\"surrogate \xED\xA0\x80\"}"),
            file_ + ":1:prompt: invalid UTF-8 in the value");
  EXPECT_EQ(line_error("{\"id\":\"\xFE\",\"prompt\":\"p\"}"),
            file_ + ":1:id: invalid UTF-8 in the value");
  EXPECT_EQ(line_error("{\"id\":\"a\",\"pro\xFFmpt\":\"p\"}"),
            file_ + ":1: invalid UTF-8 in a field name");
  // A lone surrogate escape is not a character either.
  const std::string lone = line_error(R"({"id":"a","prompt":"\ud800"})");
  EXPECT_EQ(lone.rfind(file_ + ":1:prompt: invalid JSON: column ", 0), 0U) << lone;
}

TEST_F(ManifestTest, HugeLineIsRefusedAndTheNextLineRead) {
  // A 10 MB line under the default 1 MiB limit, between two good lines.
  const std::string huge = R"({"id":"big","prompt":")" + std::string(10'000'000, 'x') + "\"}";
  write_file(manifest_, R"({"id":"a","prompt":"p"})"
                        "\n" +
                            huge + "\n" +
                            R"({"id":"c","prompt":"r"})"
                            "\n");
  ManifestReader reader(options());
  EXPECT_EQ(reader.next()->id, "a");
  EXPECT_EQ(manifest_error_of([&] { (void)reader.next(); }),
            file_ + ":2: line is longer than 1048576 bytes (input.max_line_bytes); refused");
  EXPECT_EQ(reader.line(), 2U);
  const auto c = reader.next();
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->id, "c");
  EXPECT_EQ(c->line, 3U);
  EXPECT_FALSE(reader.next().has_value());
  // The 10 MB were never held: the buffers stay within a chunk plus twice the limit.
  EXPECT_LE(reader.peak_buffer_bytes(), 64U * 1024U + 2U * ((1U << 20) + 1U));
}

TEST_F(ManifestTest, LineLimitBoundary) {
  ManifestOptions o = options();
  o.max_line_bytes = 64;
  const auto line_of = [](std::size_t bytes) {  // a valid line of exactly `bytes` bytes
    return R"({"id":"a","prompt":")" + std::string(bytes - 22, 'x') + "\"}";
  };
  ASSERT_EQ(line_of(64).size(), 64U);
  write_file(manifest_, line_of(64) + "\r\n");  // the CR does not count
  EXPECT_EQ(read_all(o).size(), 1U);
  write_file(manifest_, line_of(65) + "\n");
  EXPECT_EQ(manifest_error_of([&] { (void)read_all(o); }),
            file_ + ":1: line is longer than 64 bytes (input.max_line_bytes); refused");
  write_file(manifest_, "\n" + line_of(65));  // the last line, without a line end
  EXPECT_EQ(manifest_error_of([&] { (void)read_all(o); }),
            file_ + ":2: line is longer than 64 bytes (input.max_line_bytes); refused");
}

TEST_F(ManifestTest, HundredThousandLinesInConstantMemory) {
  constexpr std::size_t kLines = 100000;
  {
    std::ofstream out(manifest_, std::ios::binary);
    for (std::size_t i = 0; i < kLines; ++i) {
      if (i % 1000 == 0) out << "# block " << i / 1000 << "\n";
      out << R"({"id":"req-)" << i << R"(","prompt":"a video of scene number )" << i
          << R"( with a few words","seed":)" << i * 7919 << "}\n";
    }
  }
  const auto file_size = fs::file_size(manifest_);
  std::size_t longest = 0;
  {
    std::ifstream in(manifest_);
    for (std::string line; std::getline(in, line);) longest = std::max(longest, line.size());
  }
  ManifestReader reader(options());
  std::size_t count = 0;
  std::size_t last_line = 0;
  while (const auto r = reader.next()) {
    ASSERT_EQ(r->index, count);
    ++count;
    last_line = r->line;
  }
  EXPECT_EQ(count, kLines);
  EXPECT_EQ(last_line, kLines + kLines / 1000);
  EXPECT_EQ(reader.line(), last_line);
  // The buffers: one 64 KiB chunk plus a line string that never grew past twice the longest
  // line (about 100 bytes), for a file of about 9 MB.
  ASSERT_LT(longest, 110U);
  EXPECT_LE(reader.peak_buffer_bytes(), 64U * 1024U + 2U * longest);
  EXPECT_GT(file_size, 100U * reader.peak_buffer_bytes());
  // The id set: 2^18 slots of 20 bytes for 10^5 ids.
  EXPECT_EQ(reader.id_set_bytes(), 262144U * 20U);
}

TEST_F(ManifestTest, DuplicateIdsNameBothLines) {
  EXPECT_EQ(error_of(R"({"id":"a","prompt":"p"})"
                     "\n"
                     R"({"id":"b","prompt":"p"})"
                     "\n"
                     "\n"
                     R"({"id":"a","prompt":"other"})"
                     "\n"),
            file_ + ":4:id: duplicate id \"a\": first used on line 1");

  // A rejected line's id still counts.
  write_file(manifest_, R"({"id":"x","prompt":"p","seed":-1})"
                        "\n"
                        R"({"id":"x","prompt":"p"})"
                        "\n");
  const ValidationReport report = validate_manifest(options(), /*all_errors=*/true);
  ASSERT_EQ(report.errors.size(), 2U);
  EXPECT_EQ(report.errors[1].what(), file_ + ":2:id: duplicate id \"x\": first used on line 1");
  EXPECT_EQ(report.errors[1].line(), 2U);
  EXPECT_EQ(report.errors[1].field(), "id");
}

TEST_F(ManifestTest, IdRules) {
  write_file(manifest_, R"({"id":"a/b/../c","prompt":"p"})"
                        "\n"
                        R"({"id":" spaced ","prompt":"p"})"
                        "\n"
                        "{\"id\":\"" +
                            std::string(256, 'i') + "\",\"prompt\":\"p\"}\n");
  const auto requests = read_all();
  ASSERT_EQ(requests.size(), 3U);
  EXPECT_EQ(requests[0].id, "a/b/../c");
  EXPECT_EQ(requests[1].id, " spaced ");

  EXPECT_EQ(line_error(R"({"prompt":"p"})"), file_ + ":1:id: required field is missing");
  EXPECT_EQ(line_error(R"({"id":"","prompt":"p"})"), file_ + ":1:id: must not be empty");
  EXPECT_EQ(line_error("{\"id\":\"" + std::string(257, 'i') + "\",\"prompt\":\"p\"}"),
            file_ + ":1:id: is 257 bytes long, over the limit of 256");
  EXPECT_EQ(line_error(R"({"id":"a\tb","prompt":"p"})"),
            file_ + ":1:id: \"a\\u0009b\" contains a control character");
  EXPECT_EQ(line_error(R"({"id":7,"prompt":"p"})"), file_ + ":1:id: must be a string, got 7");
  EXPECT_EQ(line_error(R"({"id":"a"})"), file_ + ":1:prompt: required field is missing");
  EXPECT_EQ(line_error(R"({"id":"a","prompt":null})"),
            file_ + ":1:prompt: must be a string, got null");
}

TEST_F(ManifestTest, Seeds) {
  const std::string range = ":1:seed: must be an integer in 0..9223372036854775807 (2^63-1), got ";
  const std::vector<std::pair<std::string, std::string>> bad{
      {"7.0", "7.0"},
      {"7.5", "7.5"},
      {"-1", "-1"},
      {"-9223372036854775808", "-9223372036854775808"},
      {"9223372036854775808", "9223372036854775808"},
      {"18446744073709551616", "18446744073709551616"},
      {"1e3", "1e3"},
      {"-0.0", "-0.0"},
      {"\"7\"", "the string \"7\""},
      {"true", "true"},
      {"null", "null"},
      {"[7]", "an array"},
  };
  for (const auto& [json, shown] : bad) {
    EXPECT_EQ(line_error(R"({"id":"a","prompt":"p","seed":)" + json + "}"), file_ + range + shown)
        << json;
  }
  for (const std::string json : {"NaN", "nan", "Infinity", "-Infinity", "+1", ".5"}) {
    const std::string message = line_error(R"({"id":"a","prompt":"p","seed":)" + json + "}");
    EXPECT_EQ(message.rfind(file_ + ":1:seed: invalid JSON: column ", 0), 0U) << message;
  }
  for (const std::string json : {"0x10", "07"}) {  // JSON reads "0", then chokes
    const std::string message = line_error(R"({"id":"a","prompt":"p","seed":)" + json + "}");
    EXPECT_EQ(message.rfind(file_ + ":1: invalid JSON: column ", 0), 0U) << message;
  }
  write_file(manifest_, R"({"id":"a","prompt":"p","seed":0})"
                        "\n"
                        R"({"id":"b","prompt":"p","seed":9223372036854775807})"
                        "\n"
                        R"({"id":"c","prompt":"p","seed":-0})"
                        "\n");
  const auto requests = read_all();
  ASSERT_EQ(requests.size(), 3U);
  EXPECT_EQ(requests[0].seed, 0U);
  EXPECT_EQ(requests[1].seed, 9223372036854775807ULL);
  EXPECT_EQ(requests[2].seed, 0U);
}

TEST_F(ManifestTest, SizesMustSuitTheModel) {
  // Wan (VAE 16 x patch 2) takes multiples of 32; the reference would round 48 down to 32.
  auto o = options();
  o.size_multiple = 32;
  write_file(manifest_, R"({"id":"a","prompt":"p","height":64,"width":48})"
                        "\n");
  EXPECT_EQ(manifest_error_of([&] { (void)read_all(o); }),
            file_ + ":1:width: 48 is not a multiple of 32, which this model needs (e.g. 32 or 64)");
  // A default from the configuration is named as such.
  o.defaults.height = 80;
  write_file(manifest_, R"({"id":"a","prompt":"p","width":64})"
                        "\n");
  EXPECT_EQ(manifest_error_of([&] { (void)read_all(o); }),
            file_ +
                ":1:height: 80 (from generation.height) is not a multiple of 32, which this model "
                "needs (e.g. 64 or 96)");
  write_file(manifest_, R"({"id":"a","prompt":"p","height":96,"width":64})"
                        "\n");
  ASSERT_EQ(read_all(o).size(), 1U);
  o.size_multiple = 16;  // HunyuanVideo-1.5 and the generic rule
  write_file(manifest_, R"({"id":"a","prompt":"p","height":80,"width":48})"
                        "\n");
  EXPECT_EQ(read_all(o).size(), 1U);
}

TEST_F(ManifestTest, I2vSizeFromTheImageUnlessTheLineSetsOne) {
  write_png(dir_ / "img" / "cat.png", 7);  // 4 x 4
  write_png(dir_ / "t2v_ignored.png", 7);
  auto o = options();
  std::vector<std::pair<int, int>> asked;
  o.size_from_image = [&asked](int h, int w) {
    asked.emplace_back(h, w);
    return std::pair{128, 32};
  };
  write_file(manifest_, R"({"id":"a","prompt":"p","image":"img/cat.png"})"
                        "\n"
                        R"({"id":"b","prompt":"p","image":"img/cat.png","height":32})"
                        "\n"
                        R"({"id":"c","prompt":"p","image":"img/cat.png","height":48,"width":80})"
                        "\n"
                        R"({"id":"d","prompt":"p"})"
                        "\n");
  const auto rs = read_all(o);
  ASSERT_EQ(rs.size(), 4U);
  EXPECT_EQ(asked, (std::vector<std::pair<int, int>>{{4, 4}}));  // only line a's image
  EXPECT_EQ(std::pair(rs[0].height, rs[0].width), std::pair(128, 32));
  EXPECT_EQ(std::pair(rs[1].height, rs[1].width),
            std::pair(32, 96));  // the line's height, YAML width
  EXPECT_EQ(std::pair(rs[2].height, rs[2].width), std::pair(48, 80));
  EXPECT_EQ(std::pair(rs[3].height, rs[3].width), std::pair(64, 96));  // t2v: the YAML size
  // The input key covers the resolved size: the same line with that size spelled out has it.
  write_file(manifest_, R"({"id":"a","prompt":"p","image":"img/cat.png","height":128,"width":32})"
                        "\n");
  EXPECT_EQ(read_all(o)[0].input_key, rs[0].input_key);
  write_file(manifest_, R"({"id":"a","prompt":"p","image":"img/cat.png"})"
                        "\n");
  EXPECT_NE(read_all(options())[0].input_key, rs[0].input_key);  // no hook: 64 x 96
  // A hook that cannot size the image makes it the request's input error.
  o.size_from_image = [](int, int) -> std::pair<int, int> {
    throw std::invalid_argument("too small");
  };
  const auto bad = read_all(o);
  ASSERT_EQ(bad.size(), 1U);
  EXPECT_EQ(bad[0].input_error, file_ + ":1:image: no output size for this image: too small");
  EXPECT_TRUE(bad[0].input_key.empty());
}

TEST_F(ManifestTest, ALineOfATaskTheSnapshotDoesNotServeIsRefused) {
  write_png(dir_ / "img" / "cat.png", 7);
  auto o = options();
  o.only_task = Task::t2v;
  o.only_task_origin = "task_type in /snap/transformer/config.json";
  write_file(manifest_, R"({"id":"a","prompt":"p"})"
                        "\n"
                        R"({"id":"b","prompt":"p","image":"img/cat.png"})"
                        "\n");
  EXPECT_EQ(manifest_error_of([&] { (void)read_all(o); }),
            file_ +
                ":2:task: task i2v, but the snapshot serves t2v only (task_type in "
                "/snap/transformer/config.json; input.tasks selects the lines a job runs)");
  o.only_task = Task::i2v;
  EXPECT_EQ(manifest_error_of([&] { (void)read_all(o); }).substr(0, file_.size() + 8),
            file_ + ":1:task:");
  o.only_task.reset();
  EXPECT_EQ(read_all(o).size(), 2U);
}

// input.tasks: the lines of other tasks are checked, skipped and counted, never requests.
TEST_F(ManifestTest, TaskFilterSkipsAndCountsTheOtherTasksLines) {
  write_png(dir_ / "img" / "cat.png", 7);
  write_file(manifest_, R"({"id":"t1","prompt":"p"})"
                        "\n"
                        R"({"id":"i1","prompt":"p","image":"img/cat.png"})"
                        "\n"
                        "# a comment\n"
                        R"({"id":"t2","prompt":"p","task":"t2v"})"
                        "\n"
                        R"({"id":"i2","prompt":"p","image":"img/absent.png"})"
                        "\n");
  auto o = options();
  o.tasks = {Task::i2v};
  ManifestReader reader(o);
  std::vector<Request> got;
  while (auto r = reader.next()) got.push_back(std::move(*r));
  ASSERT_EQ(got.size(), 2U);
  EXPECT_EQ(got[0].id, "i1");
  EXPECT_EQ(got[0].line, 2U);
  EXPECT_EQ(got[0].index, 0U);
  EXPECT_EQ(got[0].image_width, 4);  // the probed image's size
  EXPECT_EQ(got[1].id, "i2");
  EXPECT_EQ(got[1].index, 1U);
  EXPECT_NE(got[1].input_error, "");  // its own input error, as without the filter
  EXPECT_EQ(reader.requests(), 2U);
  EXPECT_EQ(reader.filtered(), 2U);

  o.tasks = {Task::t2v};
  // The snapshot's one task does not apply to the lines the filter skips.
  o.only_task = Task::t2v;
  o.only_task_origin = "somewhere";
  const auto t2v = read_all(o);
  ASSERT_EQ(t2v.size(), 2U);
  EXPECT_EQ(t2v[0].id, "t1");
  EXPECT_EQ(t2v[1].id, "t2");
  EXPECT_EQ(t2v[1].index, 1U);
  const ValidationReport report = validate_manifest(o, true);
  EXPECT_TRUE(report.ok());
  EXPECT_EQ(report.requests, 2U);
  EXPECT_EQ(report.filtered, 2U);
}

TEST_F(ManifestTest, TaskFilterStillChecksTheSkippedLines) {
  write_file(manifest_, R"({"id":"a","prompt":"p"})"
                        "\n"
                        R"({"id":"b","prompt":"p","image":"../out.png"})"
                        "\n"
                        R"({"id":"a","prompt":"p","task":"i2v","image":"x.png"})"
                        "\n"
                        R"({"id":"c","prompt":"p","num_frames":10})"
                        "\n");
  auto o = options();
  o.tasks = {Task::i2v};
  const ValidationReport report = validate_manifest(o, true);
  ASSERT_EQ(report.errors.size(), 3U);
  EXPECT_EQ(std::string(report.errors[0].what()).substr(0, file_.size() + 9), file_ + ":2:image:");
  EXPECT_EQ(std::string(report.errors[1].what()).substr(0, file_.size() + 6), file_ + ":3:id:");
  EXPECT_EQ(std::string(report.errors[2].what()).substr(0, file_.size() + 14),
            file_ + ":4:num_frames:");
}

TEST_F(ManifestTest, ATaskFilterThatLeavesNothingIsAnError) {
  write_file(manifest_, R"({"id":"a","prompt":"p"})"
                        "\n"
                        R"({"id":"b","prompt":"q"})"
                        "\n");
  auto o = options();
  o.tasks = {Task::i2v};
  const ValidationReport report = validate_manifest(o, false);
  ASSERT_EQ(report.errors.size(), 1U);
  EXPECT_EQ(std::string(report.errors[0].what()),
            file_ + ":2: no requests of input.tasks [i2v]: all 2 request lines are of other tasks");
  EXPECT_EQ(report.filtered, 2U);
}

// Without a default resolved for guidance_scale / flow_shift a line must set its own.
TEST_F(ManifestTest, AnUnresolvedDefaultNeedsTheLinesOwnValue) {
  GenerationConfig defaults = test_defaults();
  defaults.guidance_scale.reset();
  EXPECT_EQ(manifest_error_of(
                [&] { (void)parse_manifest_line(R"({"id":"a","prompt":"p"})", defaults, "m", 4); }),
            "m:4:guidance_scale: not set: the line has none and no default was resolved for "
            "generation.guidance_scale");
  const Request r =
      parse_manifest_line(R"({"id":"a","prompt":"p","guidance_scale":2.5})", defaults, "m", 4);
  EXPECT_EQ(r.guidance_scale, 2.5);
  EXPECT_TRUE(r.line_sets_guidance_scale);
  EXPECT_FALSE(r.line_sets_flow_shift);
  EXPECT_FALSE(r.line_sets_size);
  EXPECT_TRUE(parse_manifest_line(R"({"id":"a","prompt":"p","guidance_scale":1,"width":64})",
                                  defaults, "m", 4)
                  .line_sets_size);
}

TEST_F(ManifestTest, RangesFollowTheConfigRules) {
  const auto field = [this](const std::string& name, const std::string& json) {
    return line_error(R"({"id":"a","prompt":"p",")" + name + "\":" + json + "}");
  };
  const auto expect = [this](const std::string& name, const std::string& reason) {
    return file_ + ":1:" + name + ": " + reason;
  };
  EXPECT_EQ(field("num_frames", "10"), expect("num_frames", check_num_frames(10)));
  EXPECT_EQ(field("num_frames", "-5"), expect("num_frames", check_num_frames(-5)));
  EXPECT_EQ(field("num_frames", "1000000000"), expect("num_frames", check_num_frames(1000000000)));
  EXPECT_EQ(field("num_frames", "33.0"), expect("num_frames", "must be an integer, got 33.0"));
  EXPECT_EQ(field("num_frames", "99999999999999999999"),
            expect("num_frames", "99999999999999999999 is out of range"));
  EXPECT_EQ(field("height", "100"), expect("height", check_frame_size(100)));
  EXPECT_EQ(field("height", "18446744073709551615"),
            expect("height", "18446744073709551615 is out of range"));
  EXPECT_EQ(field("height", "\"480\""),
            expect("height", "must be an integer, got the string \"480\""));
  EXPECT_EQ(field("width", "1"), expect("width", check_frame_size(1)));
  EXPECT_EQ(field("width", "8192"), expect("width", check_frame_size(8192)));
  EXPECT_EQ(field("num_inference_steps", "0"),
            expect("num_inference_steps", check_num_inference_steps(0)));
  EXPECT_EQ(field("guidance_scale", "-1"), expect("guidance_scale", check_guidance_scale(-1.0)));
  EXPECT_EQ(field("guidance_scale", "1e300"),
            expect("guidance_scale", "1e+300 is out of range (expected a number in [0, 100])"));
  EXPECT_EQ(field("guidance_scale", "1e999"),
            expect("guidance_scale", "invalid JSON: number overflow parsing '1e999'"));
  EXPECT_EQ(field("guidance_scale", "\"5\""),
            expect("guidance_scale", "must be a number, got the string \"5\""));
  EXPECT_EQ(field("flow_shift", "0"), expect("flow_shift", check_flow_shift(0.0)));
  EXPECT_EQ(field("fps", "0"), expect("fps", check_fps(0)));
  EXPECT_EQ(field("fps", "true"), expect("fps", "must be an integer, got true"));

  write_file(manifest_, R"({"id":"a","prompt":"p","num_frames":1,"guidance_scale":0,"fps":240})"
                        "\n");
  const auto requests = read_all();
  ASSERT_EQ(requests.size(), 1U);
  EXPECT_EQ(requests[0].num_frames, 1);
  EXPECT_EQ(requests[0].guidance_scale, 0.0);
}

TEST_F(ManifestTest, UnknownAndRepeatedFields) {
  EXPECT_EQ(line_error(R"({"id":"a","promt":"p"})"),
            file_ + ":1:promt: unknown field (did you mean 'prompt'?)");
  EXPECT_EQ(line_error(R"({"id":"a","prompt":"p","num_frame":9})"),
            file_ + ":1:num_frame: unknown field (did you mean 'num_frames'?)");
  const std::string message = line_error(R"({"id":"a","prompt":"p","zzzzzzzz":1})");
  EXPECT_EQ(message.rfind(file_ + ":1:zzzzzzzz: unknown field (valid: id, prompt, ", 0), 0U)
      << message;
  EXPECT_EQ(line_error(R"({"id":"a","prompt":"p","x\ty":1})"),
            file_ +
                ":1:x\\u0009y: unknown field (valid: id, prompt, negative_prompt, seed, task, "
                "image, prompt_embeds, num_frames, height, width, num_inference_steps, "
                "guidance_scale, flow_shift, fps, guidance_scale_2, last_image, cache, lora)");
  EXPECT_EQ(line_error(R"({"id":"a","prompt":"p","seed":1,"seed":2})"),
            file_ + ":1:seed: given twice");
}

TEST_F(ManifestTest, SyntaxErrors) {
  const auto starts_with = [](const std::string& text, const std::string& prefix) {
    return text.rfind(prefix, 0) == 0;
  };
  std::string m = line_error(R"({"id":"a","prompt":"p"} x)");
  EXPECT_TRUE(starts_with(m, file_ + ":1: unexpected text after the JSON object (column ")) << m;
  m = line_error(R"({"id":"a","prompt":"p"}{"id":"b","prompt":"q"})");
  EXPECT_TRUE(starts_with(m, file_ + ":1: unexpected text after the JSON object (column ")) << m;
  EXPECT_EQ(line_error("[1,2]"), file_ + ":1: a line must be a JSON object, got an array");
  EXPECT_EQ(line_error(R"("text")"),
            file_ + ":1: a line must be a JSON object, got the string \"text\"");
  EXPECT_EQ(line_error("42"), file_ + ":1: a line must be a JSON object, got 42");
  m = line_error(R"({"id":"a","prompt":"p")");
  EXPECT_TRUE(starts_with(m, file_ + ":1: invalid JSON: column ")) << m;
  m = line_error(R"({"id":"a","prompt":)");
  EXPECT_TRUE(starts_with(m, file_ + ":1:prompt: invalid JSON: column ")) << m;
  m = line_error(R"({'id':'a'})");
  EXPECT_TRUE(starts_with(m, file_ + ":1: invalid JSON: column ")) << m;
  m = line_error("{\"id\":\"a\",\"prompt\":\"raw\ttab\"}");
  EXPECT_TRUE(starts_with(m, file_ + ":1:prompt: invalid JSON: column ")) << m;
  EXPECT_EQ(line_error(R"({"id":"a","prompt":{"text":"p"}})"),
            file_ + ":1:prompt: must be a string, got an object");
  EXPECT_EQ(line_error(R"({"id":"a","prompt":["p"]})"),
            file_ + ":1:prompt: must be a string, got an array");
  EXPECT_EQ(line_error(R"({"id":"a","prompt":"p\u0000q"})"),
            file_ + ":1:prompt: contains a NUL character (\\u0000)");
  // Issue 39, class 10: a raw NUL byte ended nlohmann's input: the rest of the line (here a
  // second object) was dropped and the line read as valid.
  using namespace std::string_literals;
  const std::string nul_error =
      file_ +
      ":1: a NUL byte at column 24 (a manifest line is JSON text; inside a string write "
      "\\u0000)";
  EXPECT_EQ(line_error(R"({"id":"a","prompt":"p"})"s + '\0' + R"({"id":"b","prompt":"q"})"),
            nul_error);
  EXPECT_EQ(line_error(R"({"id":"a","prompt":"p"})"s + '\0'), nul_error);
  EXPECT_EQ(line_error(R"({"id":"a","prompt":"p)"s + '\0' + R"("})"),
            file_ +
                ":1: a NUL byte at column 22 (a manifest line is JSON text; inside a string "
                "write \\u0000)");
  // The error's line number counts every line, blank and comment lines included.
  EXPECT_EQ(error_of("# c\n\n"
                     R"({"id":"a","prompt":"p"})"
                     "\n"
                     R"({"id":"b"})"
                     "\n"),
            file_ + ":4:prompt: required field is missing");
}

TEST_F(ManifestTest, PathsMayNotLeaveTheManifestFolder) {
  write_png(dir_ / "img" / "cat.png", 7);
  write_png(base_ / "secret.png", 9);
  fs::create_symlink(base_ / "secret.png", dir_ / "img" / "link.png");
  fs::create_symlink(base_, dir_ / "up");
  fs::create_symlink(dir_ / "img" / "cat.png", dir_ / "img" / "alias.png");

  const std::string root = "\"" + dir_.string() + "\"";
  const std::string secret = "\"" + (base_ / "secret.png").string() + "\"";
  const auto image_line = [](const std::string& path) {
    return R"({"id":"a","prompt":"p","image":")" + path + "\"}";
  };
  EXPECT_EQ(line_error(image_line("../secret.png")),
            file_ + ":1:image: path \"../secret.png\" leaves the manifest's folder " + root +
                " (it resolves to " + secret + ")");
  EXPECT_EQ(line_error(image_line("img/../../secret.png")),
            file_ + ":1:image: path \"img/../../secret.png\" leaves the manifest's folder " + root +
                " (it resolves to " + secret + ")");
  EXPECT_EQ(line_error(image_line((base_ / "secret.png").string())),
            file_ + ":1:image: path " + secret + " leaves the manifest's folder " + root +
                " (it resolves to " + secret + ")");
  EXPECT_EQ(line_error(image_line("img/link.png")),
            file_ + ":1:image: path \"img/link.png\" leaves the manifest's folder " + root +
                " (it resolves to " + secret + ")");
  EXPECT_EQ(line_error(image_line("up/secret.png")),
            file_ + ":1:image: path \"up/secret.png\" leaves the manifest's folder " + root +
                " (it resolves to " + secret + ")");
  EXPECT_EQ(line_error(image_line("../missing.png")),
            file_ + ":1:image: path \"../missing.png\" leaves the manifest's folder " + root +
                " (it resolves to \"" + (base_ / "missing.png").string() + "\")");
  const std::string etc = line_error(image_line("/etc/hostname"));
  EXPECT_EQ(
      etc.rfind(file_ + ":1:image: path \"/etc/hostname\" leaves the manifest's folder " + root, 0),
      0U)
      << etc;
  // A folder whose name starts like the manifest's is still outside.
  write_png(base_ / "job2" / "x.png", 1);
  EXPECT_EQ(line_error(image_line("../job2/x.png")).rfind(file_ + ":1:image: path ", 0), 0U);
  EXPECT_EQ(line_error(R"({"id":"a","prompt":"p","prompt_embeds":"../secret.png"})"),
            file_ + ":1:prompt_embeds: path \"../secret.png\" leaves the manifest's folder " +
                root + " (it resolves to " + secret + ")");

  // Paths that stay inside are fine, however they are spelled.
  const std::string cat = (dir_ / "img" / "cat.png").string();
  for (const std::string& path :
       {std::string("img/cat.png"), std::string("./img//cat.png"),
        std::string("../job/img/cat.png"), cat, std::string("img/alias.png")}) {
    write_file(manifest_, image_line(path) + "\n");
    const auto requests = read_all();
    ASSERT_EQ(requests.size(), 1U) << path;
    EXPECT_EQ(requests[0].image, cat) << path;
    EXPECT_TRUE(requests[0].input_error.empty()) << path;
  }
}

TEST_F(ManifestTest, ManifestReachedThroughASymlinkedFolder) {
  write_png(dir_ / "img" / "cat.png", 7);
  fs::create_symlink(dir_, base_ / "alias");
  write_file(manifest_, R"({"id":"a","prompt":"p","image":"img/cat.png"})"
                        "\n");
  ManifestOptions o = options();
  o.path = base_ / "alias" / "m.jsonl";
  const auto requests = read_all(o);
  ASSERT_EQ(requests.size(), 1U);
  EXPECT_EQ(requests[0].image, (dir_ / "img" / "cat.png").string());
  EXPECT_TRUE(requests[0].input_error.empty());
}

TEST_F(ManifestTest, PerRequestInputDefectsDoNotStopTheManifest) {
  write_file(dir_ / "img" / "notes.png", "not a picture\n");
  write_png_header(dir_ / "img" / "huge.png", 20000, 20000);
  write_png(dir_ / "img" / "cat.png", 7);
  fs::create_directories(dir_ / "emb" / "folder");
  write_file(manifest_, R"({"id":"missing","prompt":"p","image":"img/none.png"})"
                        "\n"
                        R"({"id":"text","prompt":"p","image":"img/notes.png"})"
                        "\n"
                        R"({"id":"huge","prompt":"p","image":"img/huge.png"})"
                        "\n"
                        R"({"id":"emb","prompt":"p","prompt_embeds":"emb/none.bin"})"
                        "\n"
                        R"({"id":"embdir","prompt":"p","prompt_embeds":"emb/folder"})"
                        "\n"
                        R"({"id":"ok","prompt":"p","image":"img/cat.png"})"
                        "\n");
  const auto requests = read_all();
  ASSERT_EQ(requests.size(), 6U);
  const std::string img = (dir_ / "img").string();
  const std::string emb = (dir_ / "emb").string();
  const std::vector<std::string> expected{
      file_ + ":1:image: " + img + "/none.png: image not found",
      file_ + ":2:image: " + img + "/notes.png: not a PNG or JPEG image",
      file_ + ":3:image: " + img +
          "/huge.png: image is 20000x20000 = 400000000 pixels, over "
          "the limit of 16777216 (input.max_image_pixels)",
      file_ + ":4:prompt_embeds: " + emb + "/none.bin: file not found",
      file_ + ":5:prompt_embeds: " + emb + "/folder: is a folder, not a regular file",
  };
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(requests[i].input_error, expected[i]);
    EXPECT_TRUE(requests[i].input_key.empty()) << i;
  }
  EXPECT_TRUE(requests[5].input_error.empty());
  EXPECT_EQ(requests[5].input_key.size(), 64U);

  const ValidationReport report = validate_manifest(options(), /*all_errors=*/false);
  EXPECT_TRUE(report.ok());
  EXPECT_EQ(report.requests, 6U);
  EXPECT_EQ(report.input_errors, expected);
}

TEST_F(ManifestTest, ImageBytesDetermineTheKey) {
  write_png(dir_ / "a.png", 10);
  write_png(dir_ / "same.png", 10);
  write_png(dir_ / "b.png", 11);
  write_file(manifest_, R"({"id":"a","prompt":"p","image":"a.png"})"
                        "\n"
                        R"({"id":"same","prompt":"p","image":"same.png"})"
                        "\n"
                        R"({"id":"b","prompt":"p","image":"b.png"})"
                        "\n");
  const auto requests = read_all();
  ASSERT_EQ(requests.size(), 3U);
  EXPECT_EQ(requests[0].input_key, requests[1].input_key);
  EXPECT_NE(requests[0].input_key, requests[2].input_key);
  EXPECT_NE(requests[0].image_sha256, requests[2].image_sha256);
}

TEST_F(ManifestTest, AHashCacheHashesEachInputFileOnceAndGivesTheSameKeys) {
  write_png(dir_ / "img" / "a.png", 10);
  write_png(dir_ / "img" / "b.png", 11);
  write_file(dir_ / "emb" / "e.bin", "embeddings");
  write_file(manifest_, R"({"id":"a","prompt":"p","image":"img/a.png"})"
                        "\n"
                        R"({"id":"a2","prompt":"q","image":"img/a.png"})"
                        "\n"
                        R"({"id":"b","prompt":"p","image":"img/b.png","prompt_embeds":"emb/e.bin"})"
                        "\n"
                        R"({"id":"t","prompt":"p","prompt_embeds":"emb/e.bin"})"
                        "\n"
                        R"({"id":"none","prompt":"p","image":"img/none.png"})"
                        "\n");
  const auto plain = read_all();
  int calls = 0;
  ManifestOptions o = options();
  o.hash_cache = std::make_shared<FileHashCache>([&calls](const fs::path& path) {
    ++calls;
    return sha256_file_hex(path);
  });
  const auto first = read_all(o);
  EXPECT_EQ(calls, 3);  // a.png, b.png, e.bin
  const auto second = read_all(o);
  EXPECT_EQ(calls, 3);  // nothing read again
  ASSERT_EQ(first.size(), 5U);
  ASSERT_EQ(second.size(), 5U);
  for (std::size_t i = 0; i < plain.size(); ++i) {
    for (const auto* r : {&first[i], &second[i]}) {
      EXPECT_EQ(r->input_key, plain[i].input_key) << i;
      EXPECT_EQ(r->image_sha256, plain[i].image_sha256) << i;
      EXPECT_EQ(r->prompt_embeds_sha256, plain[i].prompt_embeds_sha256) << i;
      EXPECT_EQ(r->input_error, plain[i].input_error) << i;
    }
  }
  EXPECT_EQ(first[4].input_error,
            file_ + ":5:image: " + (dir_ / "img").string() + "/none.png: image not found");
  // Probed sizes are cached too: a cached image over a lowered limit is still refused.
  o.max_image_pixels = 15;
  const auto limited = read_all(o);
  EXPECT_EQ(limited[0].input_error,
            file_ + ":1:image: " + (dir_ / "img").string() +
                "/a.png: image is 4x4 = 16 pixels, over the limit of 15 (input.max_image_pixels)");
  EXPECT_EQ(calls, 3);
  // A rewritten file is hashed again.
  o.max_image_pixels = options().max_image_pixels;
  write_png(dir_ / "img" / "b.png", 12);
  fs::last_write_time(dir_ / "img" / "b.png",
                      fs::last_write_time(dir_ / "img" / "b.png") + std::chrono::seconds(3));
  const auto third = read_all(o);
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(third[2].image_sha256, sha256_file_hex(dir_ / "img" / "b.png"));
  EXPECT_NE(third[2].input_key, plain[2].input_key);
}

TEST_F(ManifestTest, AReaderStartedAtAPositionReadsFromThatLine) {
  write_file(manifest_,
             "\xEF\xBB\xBF"
             R"({"id":"a","prompt":"p"})"
             "\n"
             "# a comment\r\n"
             R"({"id":"b","prompt":"p"})"
             "\r\n"
             "\n"
             R"({"id":"c","prompt":"p"})"
             "\n"
             R"({"id":"d","prompt":"p"})");
  ManifestReader reader(options());
  EXPECT_EQ(reader.position().offset, 0U);
  std::vector<ManifestOptions::Position> positions;
  std::vector<Request> all;
  while (auto r = reader.next()) {
    positions.push_back(reader.position());
    all.push_back(std::move(*r));
  }
  ASSERT_EQ(all.size(), 4U);
  EXPECT_EQ(positions[0].offset, 0U);
  EXPECT_EQ(positions[1].line, 2U);
  EXPECT_EQ(positions[3].requests, 3U);
  for (std::size_t k = 1; k < all.size(); ++k) {
    ManifestOptions o = options();
    o.start = positions[k];
    const auto tail = read_all(o);
    ASSERT_EQ(tail.size(), all.size() - k) << k;
    for (std::size_t i = 0; i < tail.size(); ++i) {
      EXPECT_EQ(tail[i].id, all[k + i].id);
      EXPECT_EQ(tail[i].line, all[k + i].line);
      EXPECT_EQ(tail[i].index, all[k + i].index);
      EXPECT_EQ(tail[i].input_key, all[k + i].input_key);
    }
  }
  EXPECT_EQ(all[2].line, 5U);
  EXPECT_EQ(all[3].index, 3U);
}

TEST_F(ManifestTest, EmptyManifestsAreAnError) {
  write_file(manifest_, "");
  {
    ManifestReader reader(options());
    EXPECT_FALSE(reader.next().has_value());
  }
  ValidationReport report = validate_manifest(options(), false);
  ASSERT_EQ(report.errors.size(), 1U);
  EXPECT_FALSE(report.ok());
  EXPECT_EQ(report.errors[0].what(), file_ +
                                         ": no requests: the manifest is empty or holds "
                                         "only blank and comment lines");

  write_file(manifest_, "# only\n\n   # comments\n");
  report = validate_manifest(options(), true);
  ASSERT_EQ(report.errors.size(), 1U);
  EXPECT_EQ(report.errors[0].what(), file_ +
                                         ":3: no requests: the manifest is empty or holds "
                                         "only blank and comment lines");
}

TEST_F(ManifestTest, ValidateStopsAtTheFirstErrorUnlessAllErrors) {
  write_file(manifest_, R"({"id":"a","prompt":"p"})"
                        "\n"
                        R"({"id":"b","prompt":"p","seed":1.5})"
                        "\n"
                        R"({"id":"c","prompt":"p"})"
                        "\n"
                        R"({"id":"d","prompt":"p","colour":1})"
                        "\n"
                        R"({"id":"e","prompt":"p"})"
                        "\n");
  ValidationReport first = validate_manifest(options(), false);
  ASSERT_EQ(first.errors.size(), 1U);
  EXPECT_EQ(first.errors[0].file(), file_);
  EXPECT_EQ(first.errors[0].line(), 2U);
  EXPECT_EQ(first.errors[0].field(), "seed");
  EXPECT_EQ(first.requests, 1U);

  ValidationReport all = validate_manifest(options(), true);
  ASSERT_EQ(all.errors.size(), 2U);
  EXPECT_EQ(all.errors[0].line(), 2U);
  EXPECT_EQ(all.errors[1].line(), 4U);
  EXPECT_EQ(all.errors[1].field(), "colour");
  EXPECT_EQ(all.requests, 3U);
  EXPECT_EQ(all.errors[0].exit_code(), ExitCode::usage);
}

TEST_F(ManifestTest, UnreadableManifest) {
  ManifestOptions o = options();
  o.path = dir_ / "absent.jsonl";
  try {
    ManifestReader reader(o);
    FAIL() << "no ManifestError";
  } catch (const ManifestError& e) {
    EXPECT_EQ(std::string(e.what()),
              o.path.string() + ": cannot open the manifest: No such file or directory");
    EXPECT_EQ(e.exit_code(), ExitCode::usage);
  }
  o.path = dir_;
  try {
    ManifestReader reader(o);
    FAIL() << "no ManifestError";
  } catch (const ManifestError& e) {
    EXPECT_EQ(std::string(e.what()), dir_.string() + ": is a folder, not a manifest file");
  }
}

TEST_F(ManifestTest, PathRulesOnlyWithoutReadingInputs) {
  write_file(manifest_, R"({"id":"a","prompt":"p","image":"img/none.png"})"
                        "\n");
  ManifestOptions o = options();
  o.read_inputs = false;
  const auto requests = read_all(o);
  ASSERT_EQ(requests.size(), 1U);
  EXPECT_EQ(requests[0].image, (dir_ / "img" / "none.png").string());
  EXPECT_TRUE(requests[0].input_error.empty());
  EXPECT_TRUE(requests[0].input_key.empty());
  write_file(manifest_, R"({"id":"a","prompt":"p","image":"../x.png"})"
                        "\n");
  EXPECT_EQ(manifest_error_of([&] { (void)read_all(o); }).rfind(file_ + ":1:image: path ", 0), 0U);
}

TEST(ManifestOptionsFromConfig, CopiesTheRelevantSettings) {
  Config config;
  config.input.manifest = "/jobs/a/prompts.jsonl";
  config.input.max_line_bytes = 4096;
  config.input.max_image_pixels = 1000;
  config.generation.num_frames = 17;
  config.model.name = "synthetic";
  const ManifestOptions o = manifest_options(config, "random:3");
  EXPECT_EQ(o.path, fs::path("/jobs/a/prompts.jsonl"));
  EXPECT_EQ(o.defaults, config.generation);
  EXPECT_EQ(o.model_name, "synthetic");
  EXPECT_EQ(o.weights_identity, "random:3");
  EXPECT_EQ(o.max_line_bytes, 4096U);
  EXPECT_EQ(o.max_image_pixels, 1000U);
  EXPECT_TRUE(o.read_inputs);
  EXPECT_TRUE(o.tasks.empty());  // both tasks: no filter
  config.input.tasks = {"i2v"};
  EXPECT_EQ(manifest_options(config, "x").tasks, std::vector<Task>{Task::i2v});
  config.input.tasks = {"i2v", "t2v"};
  EXPECT_TRUE(manifest_options(config, "x").tasks.empty());
}

}  // namespace
}  // namespace omnidp
