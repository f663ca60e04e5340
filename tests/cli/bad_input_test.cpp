// The bad-input matrix (docs/reliability.md, "Bad input"): the real omni-dp-batch executable, one
// fresh folder per case, run alone (singleton MPI) or under `mpirun -np 2`. Each row names how
// its inputs are built, the exit code, the message fragments that name the file/line/field (or
// the YAML path), and what the output folder must hold afterwards. Every case checks that the
// process ended by exit(), never by a signal.
//
// The rule checked by the `output` column: a malformed config or manifest (or weights, or an
// output folder that cannot be created) stops the job before it starts: exit 2 and no output
// folder at all. A per-request input defect fails only that request: exit 1, results.h5 holds
// every request, the others ok, the failed row carrying the error.

#include <gtest/gtest.h>
#include <png.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "fixtures.hpp"
#include "omnidp/models/synthetic.hpp"
#include "omnidp/models/text/sentencepiece_model.hpp"
#include "omnidp/results/result_files.hpp"
#include "png_file.hpp"
#include "results/odd_files.hpp"
#include "results/test_util.hpp"
#include "test_files.hpp"

namespace omnidp {
namespace {

namespace fs = std::filesystem;

const fs::path kWanTransformer = omnidp::test::fixture("diffusers-ref/wan_transformer");

using omnidp::cli::testing::read_text;
using omnidp::cli::testing::write_text;

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  if (at == std::string::npos) throw std::runtime_error("fixture text lacks '" + from + "'");
  return text.replace(at, from.size(), to);
}

// A 64x64 RGB PNG of a gradient.
void write_png(const fs::path& file) {
  std::vector<std::uint8_t> pixels(64 * 64 * 3);
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<std::uint8_t>(i * 7);
  ASSERT_TRUE(omnidp::test::write_rgb_png(file, 64, 64, pixels)) << file;
}

// A valid PNG signature and IHDR claiming width x height, and no image data.
void write_png_header(const fs::path& file, png_uint_32 width, png_uint_32 height) {
  ASSERT_TRUE(omnidp::test::write_png_header(file, width, height)) << file;
}

// The synthetic model, small sizes, manifest m.jsonl and output out/ next to the config.
constexpr const char* kConfig = R"(model:
  name: synthetic
generation:
  num_frames: 5
  height: 32
  width: 48
  num_inference_steps: 2
input:
  manifest: m.jsonl
output:
  dir: out
)";

// Two good requests around the line a case puts in the middle.
constexpr const char* kGoodA = R"({"id": "a", "prompt": "first", "seed": 1})";
constexpr const char* kGoodC = R"({"id": "c", "prompt": "third", "seed": 3})";

// What the output folder must hold after the run.
enum class Output {
  none,        // the job stopped before it started: no output folder at all
  one_failed,  // per-request: results.h5 with a, b, c; only b failed, its error has `row_error`
  custom,      // checked by the case's own `check`
};

struct Case {
  std::string name;
  std::function<void(const fs::path& dir)> build;  // writes c.yaml, m.jsonl, ... into dir
  std::vector<std::string> args;                   // after `--config c.yaml`
  int exit_code = 2;
  std::vector<std::string> messages;  // fragments of stderr; @DIR@ = the case's folder
  Output output = Output::none;
  std::string row_error;     // one_failed: fragment of b's recorded error (@DIR@ allowed)
  int ranks = 0;             // 0: alone; N: under mpirun -np N
  std::string shell_prefix;  // e.g. "ulimit -f 8192; "
  std::function<void(const fs::path& dir)> check;  // Output::custom
  bool needs_fixtures = false;  // builds its snapshot from the reference fixtures
};

std::ostream& operator<<(std::ostream& out, const Case& c) { return out << c.name; }

// Writes the standard config (edited by `edit`) and a manifest a, <middle>, c.
std::function<void(const fs::path&)> inputs(std::function<std::string(std::string)> edit,
                                            std::vector<std::string> middle) {
  return [edit = std::move(edit), middle = std::move(middle)](const fs::path& dir) {
    write_text(dir / "c.yaml", edit ? edit(kConfig) : std::string(kConfig));
    std::string manifest = std::string(kGoodA) + "\n";
    for (const auto& line : middle) manifest += line + "\n";
    manifest += std::string(kGoodC) + "\n";
    write_text(dir / "m.jsonl", manifest);
  };
}
std::function<void(const fs::path&)> config_edit(const std::string& from, const std::string& to) {
  return inputs([from, to](std::string text) { return replaced(std::move(text), from, to); },
                {R"({"id": "b", "prompt": "second", "seed": 2})"});
}
std::function<void(const fs::path&)> manifest_line(const std::string& line) {
  return inputs(nullptr, {line});
}
std::function<void(const fs::path&)> manifest_text(const std::string& text) {
  return [text](const fs::path& dir) {
    write_text(dir / "c.yaml", kConfig);
    write_text(dir / "m.jsonl", text);
  };
}
// A request b whose image is built by `image` (as img/b.png, or not at all).
std::function<void(const fs::path&)> image_case(std::function<void(const fs::path&)> image,
                                                const std::string& config = kConfig) {
  return [image = std::move(image), config](const fs::path& dir) {
    write_text(dir / "c.yaml", config);
    fs::create_directories(dir / "img");
    if (image) image(dir / "img" / "b.png");
    write_text(dir / "m.jsonl", std::string(kGoodA) + "\n" +
                                    R"({"id": "b", "prompt": "second", "image": "img/b.png"})" +
                                    "\n" + kGoodC + "\n");
  };
}
// A wan2.2-ti2v-5b snapshot: model_index.json, the fixture transformer and VAE, and placeholders
// of the scheduler, text encoder and tokenizer (every component must be there before anything
// loads; the transformer loads first, so the placeholders are never read), then `damage`
// applied to its transformer folder.
std::function<void(const fs::path&)> snapshot(std::function<void(const fs::path&)> damage) {
  return [damage = std::move(damage)](const fs::path& dir) {
    write_text(dir / "c.yaml",
               replaced(replaced(kConfig, "  name: synthetic\n",
                                 "  name: wan2.2-ti2v-5b\n  weights: pretrained\n  path: snap\n"),
                        "height: 32\n  width: 48", "height: 64\n  width: 64"));
    write_text(dir / "m.jsonl", std::string(kGoodA) + "\n");
    const fs::path t = dir / "snap" / "transformer";
    write_text(dir / "snap" / "model_index.json", R"({"expand_timesteps": true})");
    write_text(t / "config.json", read_text(kWanTransformer / "config.json"));
    write_text(t / "diffusion_pytorch_model.safetensors",
               read_text(kWanTransformer / "diffusion_pytorch_model.safetensors"));
    const fs::path vae = kWanTransformer.parent_path() / "wan22_vae";
    for (const char* f : {"config.json", "diffusion_pytorch_model.safetensors"}) {
      write_text(dir / "snap" / "vae" / f, read_text(vae / f));
    }
    write_text(dir / "snap" / "scheduler" / "scheduler_config.json", "{}");
    write_text(dir / "snap" / "text_encoder" / "config.json", R"({"d_model": 32})");
    write_text(dir / "snap" / "tokenizer" / "spiece.model", "");
    damage(t);
  };
}

using Build = std::function<void(const fs::path& dir)>;

// A defect that must stop the job before it starts: exit 2, no output folder.
Case malformed(std::string name, Build build, std::vector<std::string> messages,
               std::vector<std::string> args = {}, int ranks = 0) {
  Case c;
  c.name = std::move(name);
  c.build = std::move(build);
  c.args = std::move(args);
  c.messages = std::move(messages);
  c.ranks = ranks;
  return c;
}

// A per-request defect of b: exit 1, a and c done, b's row records `row_error`.
Case per_request(std::string name, Build build, std::string row_error, int ranks = 0) {
  Case c;
  c.name = std::move(name);
  c.build = std::move(build);
  c.exit_code = 1;
  c.messages = {"request 'b' failed"};
  c.output = Output::one_failed;
  c.row_error = std::move(row_error);
  c.ranks = ranks;
  return c;
}

Case custom(Case c, std::function<void(const fs::path& dir)> check) {
  c.output = Output::custom;
  c.check = std::move(check);
  return c;
}

std::vector<Case> cases() {
  const std::string unknown_key = "generation.fsp: unknown key (did you mean 'fps'?)";
  const std::string steps = "  num_inference_steps: 2\n";
  const std::string dup = "@DIR@/m.jsonl:2:id: duplicate id \"a\": first used on line 1";
  const std::string seed = "@DIR@/m.jsonl:2:seed: must be an integer in 0..9223372036854775807";
  const std::string no_requests =
      "@DIR@/m.jsonl: no requests: the manifest is empty or holds only blank and comment lines";
  const std::string safetensors =
      "@DIR@/snap/transformer/diffusion_pytorch_model.safetensors: invalid safetensors header: ";
  const std::string missing_image = "input error: @DIR@/m.jsonl:2:image: @DIR@/img/b.png: ";
  std::vector<Case> c;
  // ---- config: exit 2, the YAML path and the value; nothing created.
  c.push_back(
      malformed("config_unknown_key", config_edit(steps, steps + "  fsp: 3\n"), {unknown_key}));
  c.push_back(malformed("config_unknown_key_mpirun", config_edit(steps, steps + "  fsp: 3\n"),
                        {unknown_key}, {}, 2));
  c.push_back(malformed("config_unknown_section",
                        config_edit("output:", "outptu:\n  dir: x\noutput:"),
                        {"outptu: unknown key (did you mean 'output'?)"}));
  c.push_back(malformed("config_wrong_type", config_edit("height: 32", "height: tall"),
                        {"generation.height: expected an integer, got 'tall'"}));
  c.push_back(malformed("config_negative_frames", config_edit("num_frames: 5", "num_frames: -5"),
                        {"generation.num_frames: -5 is out of range [1, 1025]"}));
  c.push_back(malformed("config_billion_frames",
                        config_edit("num_frames: 5", "num_frames: 1000000000"),
                        {"generation.num_frames: 1000000000 is out of range [1, 1025]"}));
  c.push_back(malformed("config_one_pixel_width", config_edit("width: 48", "width: 1"),
                        {"generation.width: 1 is out of range [16, 4096]"}));
  c.push_back(malformed("config_width_not_multiple_of_16", config_edit("width: 48", "width: 40"),
                        {"generation.width: 40 is not a multiple of 16 (e.g. 32 or 48)"}));
  c.push_back(malformed("config_height_not_multiple_of_16_by_set", config_edit("", ""),
                        {"generation.height: 33 is not a multiple of 16 (e.g. 32 or 48)"},
                        {"--set", "generation.height=33"}));
  c.push_back(malformed("config_yaml_syntax", config_edit("model:\n", "model: [\n"),
                        {"c.yaml:3:11: invalid YAML: end of sequence flow not found"}));
  c.push_back(malformed("config_unknown_model", config_edit("name: synthetic", "name: synthetik"),
                        {"model.name: unknown model 'synthetik'", "did you mean 'synthetic'?"}));
  // A model without a transformer block stack never runs a step cache: refused, not recorded.
  c.push_back(malformed("config_step_cache_on_a_model_without_blocks", config_edit("", ""),
                        {"generation.cache: model 'synthetic' has no transformer block stack to "
                         "cache"},
                        {"--set", "generation.cache=taylorseer"}));
  c.push_back(malformed("config_missing_file", manifest_text(""),
                        {"nope.yaml: cannot read the config file"}, {"--config", "nope.yaml"}));
  // Issue 39, class 10: a second YAML document was read as nothing.
  c.push_back(malformed("config_second_document",
                        config_edit("  dir: out\n", "  dir: out\n---\noutput:\n  dir: other\n"),
                        {"c.yaml:12: a second YAML document starts here: a configuration holds "
                         "one document"}));
  // Issue 39, class 13: /dev/null where a regular file is needed says so (it was read as
  // empty: every default, or "no requests").
  c.push_back(malformed("config_dev_null", manifest_text(""),
                        {"/dev/null: cannot read the config file: it is a character device, not "
                         "a regular file"},
                        {"--config", "/dev/null", "--manifest", "m.jsonl"}));
  c.push_back(malformed("manifest_dev_null", config_edit("", ""),
                        {"/dev/null: cannot read the manifest: it is a character device, not a "
                         "regular file"},
                        {"--manifest", "/dev/null"}));

  // ---- manifest: malformed -> exit 2 before anything runs; file:line:field.
  c.push_back(malformed("manifest_duplicate_id", manifest_line(R"({"id": "a", "prompt": "again"})"),
                        {dup}));
  c.push_back(malformed("manifest_duplicate_id_mpirun",
                        manifest_line(R"({"id": "a", "prompt": "again"})"), {dup}, {}, 2));
  c.push_back(malformed("manifest_invalid_utf8_prompt",
                        manifest_line("{\"id\": \"b\", \"prompt\": \"caf\xC3\x28 \xFF\"}"),
                        {"@DIR@/m.jsonl:2:prompt: invalid UTF-8 in the value"}));
  c.push_back(malformed(
      "manifest_10mb_line",
      manifest_line(R"({"id": "b", "prompt": ")" + std::string(10'000'000, 'x') + "\"}"),
      {"@DIR@/m.jsonl:2: line is longer than 1048576 bytes (input.max_line_bytes); refused"}));
  c.push_back(malformed("manifest_trailing_garbage",
                        manifest_line(R"({"id": "b", "prompt": "p"} xyz)"),
                        {"@DIR@/m.jsonl:2: unexpected text after the JSON object"}));
  c.push_back(malformed("manifest_two_objects_on_a_line",
                        manifest_line(R"({"id": "b", "prompt": "p"}{"id": "d", "prompt": "q"})"),
                        {"@DIR@/m.jsonl:2: unexpected text after the JSON object"}));
  // Issue 39, class 10: nlohmann stopped at a NUL byte; the second object was dropped unread.
  c.push_back(malformed(
      "manifest_nul_byte",
      manifest_line(std::string(R"({"id": "b", "prompt": "p"})") + '\0' +
                    R"({"id": "d", "prompt": "q"})"),
      {"@DIR@/m.jsonl:2: a NUL byte at column 27 (a manifest line is JSON text; inside a string "
       "write \\u0000)"}));
  c.push_back(malformed("manifest_truncated_json", manifest_line(R"({"id": "b", "prompt": "p")"),
                        {"@DIR@/m.jsonl:2: invalid JSON"}));
  c.push_back(malformed("manifest_seed_float",
                        manifest_line(R"({"id": "b", "prompt": "p", "seed": 7.0})"),
                        {seed, "got 7.0"}));
  c.push_back(malformed("manifest_seed_string",
                        manifest_line(R"({"id": "b", "prompt": "p", "seed": "7"})"),
                        {seed, "got the string \"7\""}));
  c.push_back(malformed("manifest_seed_negative",
                        manifest_line(R"({"id": "b", "prompt": "p", "seed": -1})"),
                        {seed, "got -1"}));
  // A line's step cache: by generation.cache's rules, a fault named by its key.
  c.push_back(malformed(
      "manifest_cache_key_of_another_policy",
      manifest_line(
          R"({"id": "b", "prompt": "p", "cache": {"policy": "first_block", "max_order": 2}})"),
      {"@DIR@/m.jsonl:2:cache.max_order: not a key of the first_block cache (its keys: "
       "threshold)"}));
  c.push_back(malformed(
      "manifest_cache_threshold_out_of_range",
      manifest_line(
          R"({"id": "b", "prompt": "p", "cache": {"policy": "first_block", "threshold": 11}})"),
      {"@DIR@/m.jsonl:2:cache.threshold: 11.0 is out of range (expected a number in (0, 10])"}));
  c.push_back(malformed("manifest_cache_unknown_policy",
                        manifest_line(R"({"id": "b", "prompt": "p", "cache": "teacache"})"),
                        {"@DIR@/m.jsonl:2:cache: invalid value 'teacache' (expected off | "
                         "first_block | taylorseer | magcache"}));
  c.push_back(malformed("manifest_cache_number",
                        manifest_line(R"({"id": "b", "prompt": "p", "cache": 0.05})"),
                        {"@DIR@/m.jsonl:2:cache: must be a policy name (off | first_block | "
                         "taylorseer | magcache) or an object {\"policy\": ..., <its keys>}, got "
                         "0.05"}));
  // The synthetic model has no block stack: a line's cache is refused as generation.cache is.
  c.push_back(malformed("manifest_cache_on_a_model_without_blocks",
                        manifest_line(R"({"id": "b", "prompt": "p", "cache": "taylorseer"})"),
                        {"@DIR@/m.jsonl:2:cache: the model has no transformer block stack to "
                         "cache"}));
  c.push_back(malformed("manifest_unknown_field",
                        manifest_line(R"({"id": "b", "prompt": "p", "frames": 5})"),
                        {"@DIR@/m.jsonl:2:frames: unknown field (did you mean 'num_frames'?)"}));
  c.push_back(malformed("manifest_frames_not_4k_plus_1",
                        manifest_line(R"({"id": "b", "prompt": "p", "num_frames": 6})"),
                        {"@DIR@/m.jsonl:2:num_frames: 6 is not of the form 4k+1"}));
  c.push_back(malformed("manifest_missing_prompt", manifest_line(R"({"id": "b"})"),
                        {"@DIR@/m.jsonl:2:prompt: required field is missing"}));
  c.push_back(malformed("manifest_empty", manifest_text(""), {no_requests}));
  c.push_back(
      malformed("manifest_only_comments", manifest_text("# one\n\n   # two\n"), {no_requests}));
  c.push_back(malformed("manifest_missing_file",
                        [](const fs::path& dir) { write_text(dir / "c.yaml", kConfig); },
                        {"@DIR@/m.jsonl: cannot open the manifest: No such file or directory"}));
  c.push_back(malformed("manifest_image_path_with_dotdot",
                        manifest_line(R"({"id": "b", "prompt": "p", "image": "../x.png"})"),
                        {"@DIR@/m.jsonl:2:image: path \"../x.png\" leaves the manifest's folder"}));
  // An id with '/' is valid (docs/manifest.md): stored under an escaped dataset name and read
  // back unchanged; nothing is written outside the output folder.
  Case slash =
      malformed("manifest_id_with_slash", manifest_line(R"({"id": "x/../y", "prompt": "p"})"), {});
  slash.exit_code = 0;
  c.push_back(custom(slash, [](const fs::path& dir) {
    const auto rows = results::read_stored_rows(dir / "out" / "results.h5");
    ASSERT_EQ(rows.size(), 3U);
    std::vector<std::string> ids;
    for (const auto& row : rows) {
      ids.push_back(row.record.id);
      EXPECT_EQ(row.record.status, RequestStatus::ok) << row.record.id;
      EXPECT_TRUE(row.video_present) << row.record.id;
    }
    std::sort(ids.begin(), ids.end());
    EXPECT_EQ(ids, (std::vector<std::string>{"a", "c", "x/../y"}));
    EXPECT_FALSE(fs::exists(dir / "y"));
  }));

  // ---- images: per-request defects -> exit 1, only b failed, a and c done.
  c.push_back(per_request("image_missing", image_case(nullptr), missing_image + "image not found"));
  c.push_back(per_request("image_missing_mpirun", image_case(nullptr),
                          missing_image + "image not found", 2));
  c.push_back(per_request("image_not_an_image", image_case([](const fs::path& f) {
                            write_text(f, "hello, not an image\n");
                          }),
                          missing_image + "not a PNG or JPEG image"));
  c.push_back(per_request("image_header_claims_20000x20000",
                          image_case([](const fs::path& f) { write_png_header(f, 20000, 20000); }),
                          missing_image +
                              "image is 20000x20000 = 400000000 pixels, over the limit of 16777216 "
                              "(input.max_image_pixels)"));
  // Damage after the header is found when the model decodes the image: tiny-wan does.
  c.push_back(per_request("image_truncated_png",
                          image_case(
                              [](const fs::path& f) {
                                write_png(f);
                                const std::string bytes = read_text(f);
                                write_text(f, bytes.substr(0, bytes.size() / 2));
                              },
                              replaced(replaced(kConfig, "name: synthetic", "name: tiny-wan"),
                                       "height: 32\n  width: 48", "height: 64\n  width: 64")),
                          "@DIR@/img/b.png: truncated or corrupt PNG"));

  // ---- weights: exit 2 before any request runs, naming the file and the tensor.
  c.push_back(malformed(
      "weights_truncated_safetensors", snapshot([](const fs::path& t) {
        const auto f = t / "diffusion_pytorch_model.safetensors";
        const std::string bytes = read_text(f);
        write_text(f, bytes.substr(0, bytes.size() / 2));
      }),
      {safetensors, "exceed the data section", "(file truncated or offsets out of range)"}));
  c.push_back(malformed("weights_header_lies_about_offsets", snapshot([](const fs::path& t) {
                          const auto f = t / "diffusion_pytorch_model.safetensors";
                          write_text(f, replaced(read_text(f), "[0,256]", "[9,265]"));  // same length
                        }),
                        {safetensors + "tensors 'blocks.0.attn1.norm_k.weight' [9, 265] and "
                                       "'blocks.0.attn1.norm_q.weight' [256, 512] overlap"}));
  c.push_back(malformed(
      "weights_wrong_tensor_shape", snapshot([](const fs::path& t) {
        const auto f = t / "config.json";
        write_text(f, replaced(read_text(f), "\"ffn_dim\": 128", "\"ffn_dim\": 256"));
      }),
      {"@DIR@/snap/transformer: checkpoint does not match the model; 6 shape "
       "mismatches",
       "blocks.0.ffn.net.0.proj.bias (checkpoint [128] in diffusion_pytorch_model.safetensors, "
       "model [256])"}));
  // A component missing: the job stops before any weights are read, naming the file it lacks.
  c.push_back(
      malformed("weights_snapshot_without_vae",
                snapshot([](const fs::path& t) { fs::remove_all(t.parent_path() / "vae"); }),
                {"@DIR@/snap/vae/config.json: missing: the snapshot @DIR@/snap has no vae/ folder "
                 "(AutoencoderKLWan: config.json + safetensors)"}));
  // The UMT5 tokenizer's spiece.model: the native reader names the file and the byte.
  const std::string spiece = "@DIR@/snap/tokenizer/spiece.model: ";
  const auto tokenizer = [](std::string bytes) {
    return snapshot([bytes = std::move(bytes)](const fs::path& t) {
      // A real scheduler (read before the text encoder), then the damaged tokenizer, which is
      // read before the text encoder's placeholder config.
      write_text(t.parent_path() / "scheduler" / "scheduler_config.json",
                 R"({"_class_name": "UniPCMultistepScheduler", "num_train_timesteps": 1000,
                     "prediction_type": "flow_prediction", "use_flow_sigmas": true,
                     "flow_shift": 5.0, "solver_order": 2, "solver_type": "bh2",
                     "predict_x0": true, "lower_order_final": true,
                     "final_sigmas_type": "zero", "timestep_spacing": "linspace"})");
      write_text(t.parent_path() / "tokenizer" / "spiece.model", bytes);
    });
  };
  const std::string word_model = models::text::unigram_word_model({"first", "second"}).serialize();
  c.push_back(malformed("weights_spiece_truncated", tokenizer(word_model.substr(0, 5)),
                        {spiece + "malformed protobuf at byte 0: field 1: length-delimited value "
                                  "of 14 bytes runs past the end (3 left)"}));
  c.push_back(malformed(
      "weights_spiece_wrong_wire_type", tokenizer(std::string("\x0a\x05\x0a\x01x\x10\x05", 7)),
      {spiece + "malformed protobuf at byte 5: field 2 (varint): expected fixed32"}));
  c.push_back(malformed(
      "weights_spiece_piece_of_2_31_bytes", tokenizer(std::string("\x0a\x80\x80\x80\x80\x08", 6)),
      {spiece + "malformed protobuf at byte 0: field 1: length-delimited value of "
                "2147483648 bytes runs past the end (0 left)"}));
  auto outside = models::text::unigram_word_model({"first", "second"});
  // One trie unit, a leaf whose replacement offset (256) is past the 2 bytes of strings.
  outside.precompiled_charsmap = std::string(
      "\x04\x00\x00\x00\x00\x01\x00\x00"
      "a\0",
      10);
  c.push_back(malformed("weights_spiece_charsmap_outside_its_buffer", tokenizer(outside.serialize()),
                        {spiece + "normalizer precompiled_charsmap: unit 0 of 1: replacement "
                                  "offset 256 outside the 2 bytes of NUL-terminated strings"}));
  for (auto it = c.end() - 8; it != c.end(); ++it) it->needs_fixtures = true;  // snapshot()s

  // ---- output
  c.push_back(malformed("output_under_a_regular_file",
                        [](const fs::path& dir) {
                          write_text(dir / "c.yaml", kConfig);
                          write_text(dir / "m.jsonl", std::string(kGoodA) + "\n");
                          write_text(dir / "file", "x");
                        },
                        {"output.dir: cannot create the output folder '@DIR@/file/out': "
                         "'@DIR@/file' is not a folder"},
                        {"--output", "file/out"}));
  c.push_back(custom(malformed("output_is_a_regular_file",
                               [](const fs::path& dir) {
                                 write_text(dir / "c.yaml", kConfig);
                                 write_text(dir / "m.jsonl", std::string(kGoodA) + "\n");
                                 write_text(dir / "out", "x");
                               },
                               {"output.dir: cannot create the output folder '@DIR@/out': "
                                "'@DIR@/out' is not a folder"}),
                     [](const fs::path& dir) { EXPECT_EQ(read_text(dir / "out"), "x"); }));
  // Issue 52, class 3: an output folder that is a link loop, or under one, is refused before
  // the job starts (it was exit 1, "cannot create the output folder", after loading the model).
  for (const std::string out : {"out", "out/sub"}) {
    c.push_back(custom(
        malformed(out == "out" ? "output_is_a_link_loop" : "output_under_a_link_loop",
                  [](const fs::path& dir) {
                    write_text(dir / "c.yaml", kConfig);
                    write_text(dir / "m.jsonl", std::string(kGoodA) + "\n");
                    fs::create_symlink("out", dir / "out");
                  },
                  {"output.dir: cannot create the output folder '@DIR@/" + out + "': '@DIR@/" +
                   out + "' is a symbolic link loop (too many levels of symbolic links)"},
                  {"--output", out}),
        [](const fs::path& dir) { EXPECT_TRUE(fs::is_symlink(dir / "out")); }));
  }
  // A full disk, simulated by RLIMIT_FSIZE (8 MiB; SIGXFSZ ignored, so write() fails with
  // EFBIG): a (small) is flushed, b (33x512x512 RGB = 26 MB) does not fit. The job stops
  // (exit 1), no results.h5 is written, the rank file keeps a readable and intact.
  Case full = malformed(
      "output_full_disk",
      manifest_text(std::string(kGoodA) + "\n" +
                    R"({"id": "b", "prompt": "big", "num_frames": 33, "height": 512, "width": 512})" +
                    "\n"),
      {"@DIR@/out/rank-00000.h5", "error message = 'File too large'"},
      {"--set", "scheduler.order=manifest"});
  full.exit_code = 1;
  full.shell_prefix = "trap '' XFSZ; ulimit -f 8192; ";
  c.push_back(custom(full, [](const fs::path& dir) {
    EXPECT_FALSE(fs::exists(dir / "out" / "results.h5"));
    const auto rows = results::read_stored_rows(dir / "out" / "rank-00000.h5");
    ASSERT_EQ(rows.size(), 1U);
    EXPECT_EQ(rows[0].record.id, "a");
    EXPECT_EQ(rows[0].record.status, RequestStatus::ok);
    EXPECT_TRUE(rows[0].video_present);
    EXPECT_EQ(rows[0].record.video_sha256, video_sha256(models::synthetic_video(1, 5, 32, 48)));
  }));
  return c;
}

// A fresh folder `name`-<pid> under the temp directory (what was there is removed).
fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Requests a, b and c with the synthetic model, built in `dir`.
Case synthetic_abc(const fs::path& dir) {
  Case c;
  c.build = config_edit("", "");
  c.build(dir);
  return c;
}

struct BatchRun {
  int exit_code = -1;
  int signal = 0;
  std::string err;
};

BatchRun run_batch(const fs::path& dir, const Case& c, const std::vector<std::string>& args) {
  std::string cmd =
      "export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1; cd '" +
      dir.string() + "' && " + c.shell_prefix + "exec ";
  if (c.ranks > 0) {
    cmd += "mpirun --oversubscribe --bind-to none -np " + std::to_string(c.ranks) + " ";
  }
  cmd += OMNIDP_BATCH_EXE;
  if (std::find(args.begin(), args.end(), "--config") == args.end()) cmd += " --config c.yaml";
  for (const auto& a : args) cmd += " '" + a + "'";
  cmd += " > stdout.txt 2> stderr.txt";
  BatchRun r;
  const int status = std::system(cmd.c_str());
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  r.err = read_text(dir / "stderr.txt");
  return r;
}

std::string expand(std::string text, const fs::path& dir) {
  for (auto at = text.find("@DIR@"); at != std::string::npos; at = text.find("@DIR@", at)) {
    text.replace(at, 5, dir.string());
  }
  return text;
}

class BadInput : public ::testing::TestWithParam<Case> {};

TEST_P(BadInput, ClearErrorRightExitCodeNoCrashNoPartialOutput) {
  const Case& c = GetParam();
  if (c.needs_fixtures) OMNIDP_REQUIRE_FIXTURES();
  const fs::path dir = fresh_dir("omnidp-bad-input-" + c.name);
  c.build(dir);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());

  const BatchRun r = run_batch(dir, c, c.args);
  EXPECT_EQ(r.signal, 0) << "killed by signal " << r.signal << "\n" << r.err;
  EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
  EXPECT_LT(r.exit_code, 3) << "never a signal's 128+N";
  for (const auto& fragment : c.messages) {
    EXPECT_NE(r.err.find(expand(fragment, dir)), std::string::npos)
        << "missing: " << expand(fragment, dir) << "\nstderr:\n"
        << r.err;
  }
  if (c.exit_code == 2) {  // one error line, printed by rank 0 only
    std::size_t lines = 0;
    for (auto at = r.err.find("omni-dp-batch: error: "); at != std::string::npos;
         at = r.err.find("omni-dp-batch: error: ", at + 1)) {
      ++lines;
    }
    EXPECT_EQ(lines, 1U) << r.err;
  }

  const fs::path out = dir / "out";
  switch (c.output) {
    case Output::none: EXPECT_FALSE(fs::exists(out)) << "the job created its output folder"; break;
    case Output::one_failed: {
      const auto rows = results::read_stored_rows(out / "results.h5");
      std::map<std::string, results::StoredRow> by_id;
      for (const auto& row : rows) by_id.emplace(row.record.id, row);
      ASSERT_EQ(rows.size(), 3U);
      ASSERT_EQ(by_id.size(), 3U);
      for (const char* ok : {"a", "c"}) {
        EXPECT_EQ(by_id[ok].record.status, RequestStatus::ok) << ok << ": " << by_id[ok].record.error;
        EXPECT_TRUE(by_id[ok].video_present) << ok;
      }
      const auto& b = by_id["b"];
      EXPECT_EQ(b.record.status, RequestStatus::failed);
      EXPECT_FALSE(b.video_present);
      EXPECT_NE(b.record.error.find(expand(c.row_error, dir)), std::string::npos)
          << "row error: " << b.record.error;
      break;
    }
    case Output::custom:
      if (c.check) c.check(dir);
      break;
  }
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Matrix, BadInput, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& param) { return param.param.name; });

// The full-disk case, then the same command without the limit: resume finishes the rest.
TEST(BadInputRecovery, FullDiskThenResume) {
  Case c = cases().back();
  ASSERT_EQ(c.name, "output_full_disk");
  const fs::path dir = fresh_dir("omnidp-bad-input-resume");
  c.build(dir);
  const BatchRun full = run_batch(dir, c, c.args);
  ASSERT_EQ(full.exit_code, 1) << full.err;
  c.shell_prefix.clear();
  const BatchRun again = run_batch(dir, c, c.args);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("1 already done, skipped"), std::string::npos) << again.err;
  const auto rows = results::read_stored_rows(dir / "out" / "results.h5");
  ASSERT_EQ(rows.size(), 2U);
  for (const auto& row : rows) {
    EXPECT_EQ(row.record.status, RequestStatus::ok) << row.record.id;
    EXPECT_TRUE(row.video_present) << row.record.id;
  }
  fs::remove_all(dir);
}

// Issue 39, class 7: the advice of an exit 2 leads somewhere that works. A finished run, one
// prompt edited: the plain rerun stops (exit 2) advising --no-resume; after following it, every
// later plain rerun (alone, and under mpirun as a Slurm requeue would run it) skips all three,
// exit 0, where it used to stop with "the folder mixes two manifests".
TEST(BadInputRecovery, EditedPromptThenNoResumeThenPlainReruns) {
  const fs::path dir = fresh_dir("omnidp-bad-input-edited");
  Case c = synthetic_abc(dir);
  ASSERT_EQ(run_batch(dir, c, {}).exit_code, 0);
  write_text(dir / "m.jsonl", replaced(read_text(dir / "m.jsonl"), "\"second\"", "\"edited\""));
  const BatchRun refused = run_batch(dir, c, {});
  ASSERT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("or --no-resume to run it again"), std::string::npos) << refused.err;
  const BatchRun again = run_batch(dir, c, {"--no-resume"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const auto key_of_b = [&dir] {
    for (const auto& row : results::read_stored_rows(dir / "out" / "results.h5")) {
      if (row.record.id == "b") return row.record.input_key;
    }
    return std::string();
  };
  const std::string edited_key = key_of_b();
  ASSERT_FALSE(edited_key.empty());
  for (const int ranks : {0, 0, 2}) {
    c.ranks = ranks;
    const BatchRun plain = run_batch(dir, c, {});
    ASSERT_EQ(plain.exit_code, 0) << "ranks " << ranks << "\n" << plain.err;
    EXPECT_NE(plain.err.find("3 already done, skipped"), std::string::npos) << plain.err;
    EXPECT_EQ(plain.err.find("mixes two manifests"), std::string::npos) << plain.err;
    const auto rows = results::read_stored_rows(dir / "out" / "results.h5");
    ASSERT_EQ(rows.size(), 3U);
    for (const auto& row : rows) EXPECT_EQ(row.record.status, RequestStatus::ok) << row.record.id;
    EXPECT_EQ(key_of_b(), edited_key);
  }
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// Issue 39, class 9: a flipped byte in a stored video was skipped as done by every rerun. A plain
// rerun still skips it (resume reads back only what a torn write breaks); `--verify` re-hashes
// the stored videos, names the damaged one and generates it again: results.h5 then holds three
// videos that match their hashes, b's from the new row.
TEST(BadInputRecovery, VerifyGeneratesADamagedStoredVideoAgain) {
  const fs::path dir = fresh_dir("omnidp-bad-input-verify");
  const Case c = synthetic_abc(dir);
  ASSERT_EQ(run_batch(dir, c, {}).exit_code, 0);
  const fs::path rank_file = dir / "out" / "rank-00000.h5";
  results::testing::flip_stored_byte(rank_file, "b");
  const BatchRun plain = run_batch(dir, c, {});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_NE(plain.err.find("3 already done, skipped"), std::string::npos) << plain.err;

  const BatchRun verify = run_batch(dir, c, {"--verify"});
  ASSERT_EQ(verify.exit_code, 0) << verify.err;
  EXPECT_NE(verify.err.find("verify: " + rank_file.string() +
                            ": request 'b': the stored video does not match its recorded "
                            "video_sha256 "),
            std::string::npos)
      << verify.err;
  EXPECT_NE(verify.err.find("; it is generated again"), std::string::npos) << verify.err;
  EXPECT_NE(verify.err.find("verify: re-hashed 3 stored video(s) in " + (dir / "out").string() +
                            ": 1 did not match their video_sha256 and are generated again"),
            std::string::npos)
      << verify.err;
  EXPECT_NE(verify.err.find("2 already done, skipped"), std::string::npos) << verify.err;
  const auto rows = results::read_stored_rows(dir / "out" / "results.h5", 0, false, true);
  ASSERT_EQ(rows.size(), 3U);
  for (const auto& row : rows) {
    EXPECT_EQ(row.record.status, RequestStatus::ok) << row.record.id;
    EXPECT_TRUE(row.video_present) << row.record.id << ": " << row.video_error;
  }
  const BatchRun again = run_batch(dir, c, {"--verify"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find(": 0 did not match their video_sha256"), std::string::npos) << again.err;
  EXPECT_NE(again.err.find("3 already done, skipped"), std::string::npos) << again.err;
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// A changed numerics profile (docs/reliability.md): the same output folder rerun with another
// dtype is refused (exit 2, one line naming both profiles and the key), nothing is added to it;
// with --resume-mixed the done requests are kept and the new one records the new profile.
TEST(ResumeProfile, AnotherDtypeIsRefusedUnlessResumeMixed) {
  const fs::path dir = fresh_dir("omnidp-resume-profile");
  const Case c = synthetic_abc(dir);
  const BatchRun first = run_batch(dir, c, {});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto profile_of = [](const results::StoredRow& row) { return row.record.numerics; };
  const auto first_rows = results::read_stored_rows(dir / "out" / "results.h5");
  ASSERT_EQ(first_rows.size(), 3U);
  const std::string fp32 = profile_of(first_rows[0]);
  ASSERT_EQ(fp32.rfind("dtype=fp32;device=cpu;strict=true;attention=auto;kernels=fused;"
                       "quantization=none;layout=tp1,sp1,cfg1;software=",
                       0),
            0U)
      << fp32;
  std::string bf16 = fp32;
  bf16.replace(0, 10, "dtype=bf16");

  const BatchRun refused = run_batch(dir, c, {"--set", "model.dtype=bf16"});
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("omni-dp-batch: error: " + (dir / "out").string() +
                             ": 3 request(s) already done here (e.g. in rank-00000.h5) were made "
                             "with numerics profile '" +
                             fp32 + "', but this run's profile is '" + bf16 +
                             "' (differing: dtype (fp32 -> bf16)); "),
            std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("--resume-mixed to keep them"), std::string::npos) << refused.err;
  std::size_t error_lines = 0;
  for (auto at = refused.err.find("omni-dp-batch: error: "); at != std::string::npos;
       at = refused.err.find("omni-dp-batch: error: ", at + 1)) {
    ++error_lines;
  }
  EXPECT_EQ(error_lines, 1U) << refused.err;
  for (const auto& file : results::list_rank_files(dir / "out")) {
    for (const auto& row : results::read_stored_rows(file))
      EXPECT_EQ(profile_of(row), fp32) << file;
  }

  write_text(dir / "m.jsonl",
             read_text(dir / "m.jsonl") + R"({"id": "d", "prompt": "fourth", "seed": 4})" + "\n");
  const BatchRun mixed = run_batch(dir, c, {"--set", "model.dtype=bf16", "--resume-mixed"});
  ASSERT_EQ(mixed.exit_code, 0) << mixed.err;
  EXPECT_NE(mixed.err.find("resume (--resume-mixed): 3 request(s) done in " + (dir / "out").string() +
                           " were made with numerics profile '" + fp32 + "'"),
            std::string::npos)
      << mixed.err;
  EXPECT_NE(mixed.err.find("3 already done, skipped"), std::string::npos) << mixed.err;
  const auto rows = results::read_stored_rows(dir / "out" / "results.h5");
  ASSERT_EQ(rows.size(), 4U);
  for (const auto& row : rows) {
    EXPECT_EQ(row.record.status, RequestStatus::ok) << row.record.id;
    EXPECT_EQ(profile_of(row), row.record.id == "d" ? bf16 : fp32) << row.record.id;
  }
  // Resuming again with bf16 is refused again: the folder still holds fp32 rows.
  EXPECT_EQ(run_batch(dir, c, {"--set", "model.dtype=bf16"}).exit_code, 2);
  // --resume-mixed with --no-resume is a usage error.
  EXPECT_EQ(run_batch(dir, c, {"--no-resume", "--resume-mixed"}).exit_code, 2);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// The standard config on a model with a block stack (the synthetic model refuses a step cache
// and LoRA adapters): tiny-wan, seeded, fp32 on the CPU, 32 x 32.
std::string tiny_wan_config(std::string text) {
  return replaced(replaced(std::move(text), "name: synthetic",
                           "name: tiny-wan\n  weights: random\n  dtype: fp32\n  device: cpu"),
                  "width: 48", "width: 32");
}

// A LoRA file of tiny-wan's blocks in the original-name layout (float32 safetensors written by
// hand: the test links no torch), its values from `seed`.
void write_tiny_lora(const fs::path& path, unsigned seed) {
  std::string header = "{";
  std::string data;
  const auto add = [&](const std::string& name, std::vector<std::int64_t> shape) {
    std::int64_t n = 1;
    for (const auto d : shape) n *= d;
    const std::size_t begin = data.size();
    for (std::int64_t i = 0; i < n; ++i) {
      const float v =
          shape.empty() ? 2.0F : 0.05F * static_cast<float>((i * 7 + seed * 13) % 11) - 0.25F;
      data.append(reinterpret_cast<const char*>(&v), sizeof v);
    }
    std::string dims;
    for (const auto d : shape) dims += (dims.empty() ? "" : ",") + std::to_string(d);
    header += (header.size() > 1 ? "," : "") + std::string("\"") + name +
              "\":{\"dtype\":\"F32\",\"shape\":[" + dims + "],\"data_offsets\":[" +
              std::to_string(begin) + "," + std::to_string(data.size()) + "]}";
  };
  for (int b = 0; b < 2; ++b) {
    const std::string p = "diffusion_model.blocks." + std::to_string(b) + ".self_attn.q";
    add(p + ".lora_down.weight", {4, 128});
    add(p + ".lora_up.weight", {128, 4});
    add(p + ".alpha", {});
  }
  header += "}";
  while (header.size() % 8 != 0) header += ' ';
  std::string bytes(8, '\0');
  std::uint64_t size = header.size();
  std::memcpy(bytes.data(), &size, 8);
  write_text(path, bytes + header + data);
}

// The job's adapters are numerics of the job, as model.dtype is (issue 53): a resume with another
// adapter file (or scale) is refused naming both sets; --resume-mixed keeps the rows made with the
// old one and runs only what is new with the new one; a line's own adapters are its request's.
TEST(ResumeProfile, AChangedJobAdapterIsRefusedUnlessResumeMixed) {
  const fs::path dir = fresh_dir("omnidp-resume-lora");
  Case c;
  c.build = inputs(
      tiny_wan_config,
      {R"({"id": "b", "prompt": "second", "seed": 2, "lora": [{"path": "two.safetensors", "scale": 0.5}]})"});
  c.build(dir);
  write_tiny_lora(dir / "one.safetensors", 1);
  write_tiny_lora(dir / "two.safetensors", 2);
  const BatchRun first = run_batch(dir, c, {"--set", "model.lora=[one.safetensors]"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto rows = results::read_stored_rows(dir / "out" / "results.h5");
  ASSERT_EQ(rows.size(), 3U);
  for (const auto& row : rows) {
    EXPECT_NE(row.record.numerics.find(";lora="), std::string::npos) << row.record.numerics;
    EXPECT_EQ(row.record.numerics.find(";lora_line=") != std::string::npos, row.record.id == "b")
        << row.record.numerics;
  }
  const BatchRun refused =
      run_batch(dir, c, {"--set", "model.lora=[{path: one.safetensors, scale: 0.5}]"});
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("(differing: lora ("), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("*1 -> "), std::string::npos) << refused.err;
  const BatchRun same = run_batch(dir, c, {"--set", "model.lora=[one.safetensors]"});
  EXPECT_EQ(same.exit_code, 0) << same.err;
  EXPECT_NE(same.err.find("3 already done, skipped"), std::string::npos) << same.err;
  const BatchRun mixed =
      run_batch(dir, c, {"--set", "model.lora=[two.safetensors]", "--resume-mixed"});
  EXPECT_EQ(mixed.exit_code, 0) << mixed.err;
  EXPECT_NE(mixed.err.find("3 already done, skipped"), std::string::npos) << mixed.err;
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// A step cache changes the bytes (issue 37): the same folder rerun without the cache it was made
// with is refused like another dtype, naming the cache key with both values.
TEST(ResumeProfile, AnotherStepCacheIsRefused) {
  const fs::path dir = fresh_dir("omnidp-resume-cache");
  Case c;
  // A model with a block stack (the synthetic model refuses a cache): tiny-wan, 32 x 32.
  c.build = inputs(tiny_wan_config, {R"({"id": "b", "prompt": "second", "seed": 2})"});
  c.build(dir);
  const BatchRun first = run_batch(dir, c, {"--set", "generation.cache=taylorseer"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto rows = results::read_stored_rows(dir / "out" / "results.h5");
  ASSERT_EQ(rows.size(), 3U);
  EXPECT_NE(rows[0].record.numerics.find(
                ";cache=taylorseer(cache_interval 5, disable_cache_before_step 3, max_order 1);"
                "software="),
            std::string::npos)
      << rows[0].record.numerics;
  const BatchRun refused = run_batch(dir, c, {});
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("(differing: cache (taylorseer(cache_interval 5, "
                             "disable_cache_before_step 3, max_order 1) -> off))"),
            std::string::npos)
      << refused.err;
  const BatchRun same = run_batch(dir, c, {"--set", "generation.cache=taylorseer"});
  EXPECT_EQ(same.exit_code, 0) << same.err;
  EXPECT_NE(same.err.find("3 already done, skipped"), std::string::npos) << same.err;
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// A manifest line's own cache: the row says what ran, the line's input key pins it, and
// generation.cache no longer decides for that line.
TEST(ResumeProfile, ALinesOwnCacheIsPinnedByItsInputKey) {
  const fs::path dir = fresh_dir("omnidp-line-cache");
  Case c;
  const auto manifest = [&dir](const std::string& b_cache) {
    write_text(dir / "m.jsonl",
               std::string(R"({"id": "a", "prompt": "first", "seed": 1, "cache": "off"})") + "\n" +
                   R"({"id": "b", "prompt": "second", "seed": 2, "cache": )" + b_cache + "}\n");
  };
  write_text(dir / "c.yaml", tiny_wan_config(kConfig));
  manifest(R"({"policy": "first_block", "threshold": 10})");
  const BatchRun first = run_batch(dir, c, {"--dry-run"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string plan = read_text(dir / "stdout.txt");
  EXPECT_NE(plan.find("cache first_block(threshold 10.0) (manifest line 2)"), std::string::npos)
      << plan;
  const BatchRun run = run_batch(dir, c, {});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto rows = results::read_stored_rows(dir / "out" / "results.h5");
  ASSERT_EQ(rows.size(), 2U);
  for (const auto& row : rows) {
    const auto& r = row.record;
    // CFG (tiny-wan's guidance 5): two branches x two steps.
    EXPECT_EQ(r.forwards, 4) << r.id;
    if (r.id == "a") {
      EXPECT_NE(r.numerics.find(";cache=line:off;software="), std::string::npos) << r.numerics;
      EXPECT_EQ(r.forwards_computed, 4);
    } else {
      EXPECT_NE(r.numerics.find(";cache=line:first_block(threshold 10.0);software="), std::string::npos)
          << r.numerics;
      // Each branch computes its first step and reuses the cached residual on the second.
      EXPECT_EQ(r.forwards_computed, 2);
    }
  }
  // Another generation.cache does not touch lines that set their own.
  const BatchRun other_default = run_batch(dir, c, {"--set", "generation.cache=taylorseer"});
  EXPECT_EQ(other_default.exit_code, 0) << other_default.err;
  EXPECT_NE(other_default.err.find("2 already done, skipped"), std::string::npos)
      << other_default.err;
  // A line's changed cache is a changed request.
  manifest(R"({"policy": "first_block", "threshold": 5})");
  const BatchRun changed = run_batch(dir, c, {});
  EXPECT_EQ(changed.exit_code, 2) << changed.err;
  EXPECT_NE(changed.err.find("m.jsonl:2:id: request 'b' is already done in"), std::string::npos)
      << changed.err;
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// ---- issue 52: the files of the job's own folder

// omni-dp-batch in `dir` (under mpirun -np `ranks` when ranks > 0) under `timeout`: a job that
// blocks (a FIFO opened for reading) ends with 124 and fails the test instead of hanging it.
BatchRun run_guarded(const fs::path& dir, int ranks, const std::vector<std::string>& args) {
  std::string cmd =
      "export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1; cd '" +
      dir.string() + "' && exec timeout -k 10 300 ";
  if (ranks > 0) {
    cmd += "mpirun --oversubscribe --bind-to none -np " + std::to_string(ranks) + " ";
  }
  cmd += std::string(OMNIDP_BATCH_EXE) + " --config c.yaml";
  for (const auto& a : args) cmd += " '" + a + "'";
  cmd += " > stdout.txt 2> stderr.txt";
  BatchRun r;
  const int status = std::system(cmd.c_str());
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  r.err = read_text(dir / "stderr.txt");
  return r;
}

// The three requests a, b, c done and merged in dir/out (the folder every case below starts from).
fs::path finished_run(const std::string& name) {
  const fs::path dir = fresh_dir(name);
  (void)synthetic_abc(dir);
  const BatchRun first = run_guarded(dir, 0, {});
  EXPECT_EQ(first.exit_code, 0) << first.err;
  return dir;
}

void expect_three_ok(const fs::path& out) {
  const auto rows = results::read_stored_rows(out / "results.h5");
  ASSERT_EQ(rows.size(), 3U);
  for (const auto& row : rows) {
    EXPECT_EQ(row.record.status, RequestStatus::ok) << row.record.id;
    EXPECT_TRUE(row.video_present) << row.record.id;
  }
}

// Issue 52, class 5: a FIFO named .omnidp-file-hashes blocked the job, --validate-only and
// --dry-run; one named attempts-rank-00001.log blocked rank 1's worker (a 2-rank job never
// ended); summary.json or results.h5 as a FIFO refused the job's verdict after all the work.
// Each: the command ends, with one warning naming the file, and the job's results are whole.
TEST(OwnFolder, AFifoUnderAnyNameOfTheJobsFolderNeverBlocksIt) {
  const fs::path dir = finished_run("omnidp-own-fifo");
  const fs::path out = dir / "out";
  const fs::path sidecar = out / ".omnidp-file-hashes";
  fs::remove(sidecar);
  ASSERT_EQ(::mkfifo(sidecar.c_str(), 0600), 0);
  const std::string ignored = sidecar.string() +
                              ": cannot read the file hash cache: is a FIFO, not a regular file; "
                              "the file hash cache is ignored";
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"--validate-only"}, {"--dry-run"}, {"--no-resume"}}) {
    SCOPED_TRACE(args.front());
    const BatchRun r = run_guarded(dir, 0, args);
    EXPECT_EQ(r.signal, 0);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find(ignored), std::string::npos) << r.err;
  }
  expect_three_ok(out);

  // A FIFO under rank 1's attempt log, and under the job's summary.json and results.h5.
  for (const char* name : {"attempts-rank-00001.log", "summary.json", "results.h5"}) {
    fs::remove(out / name);
    ASSERT_EQ(::mkfifo((out / name).c_str(), 0600), 0) << name;
  }
  const BatchRun two = run_guarded(dir, 2, {"--no-resume"});
  EXPECT_EQ(two.signal, 0);
  EXPECT_EQ(two.exit_code, 0) << two.err;
  EXPECT_NE(two.err.find("attempts are not counted across runs: " +
                         (out / "attempts-rank-00001.log").string() +
                         ": cannot open the attempt log: is a FIFO, not a regular file"),
            std::string::npos)
      << two.err;
  EXPECT_NE(two.err.find((out / "summary.json").string() +
                         " was a FIFO, not a regular file: replaced by the summary"),
            std::string::npos)
      << two.err;
  EXPECT_NE(two.err.find("merge: " + (out / "results.h5").string() +
                         " was a FIFO, not a regular file: replaced by the merged results"),
            std::string::npos)
      << two.err;
  EXPECT_TRUE(fs::is_regular_file(out / "summary.json"));
  expect_three_ok(out);

  // --merge-only and a plain rerun over a FIFO named summary.json: the figures from the rows.
  fs::remove(out / "summary.json");
  ASSERT_EQ(::mkfifo((out / "summary.json").c_str(), 0600), 0);
  const BatchRun merged = run_guarded(dir, 0, {"--merge-only", out.string()});
  EXPECT_EQ(merged.exit_code, 0) << merged.err;
  EXPECT_NE(merged.err.find("merge: " + (out / "summary.json").string() +
                            ": is a FIFO, not a regular file; the figures are recomputed"),
            std::string::npos)
      << merged.err;
  const BatchRun rerun = run_guarded(dir, 0, {});
  EXPECT_EQ(rerun.exit_code, 0) << rerun.err;
  EXPECT_NE(rerun.err.find("3 already done, skipped"), std::string::npos) << rerun.err;
  expect_three_ok(out);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// Issue 52, classes 3 and 13: a link loop anywhere in the output folder made every rerun and
// --merge-only exit 1 ("internal error": the folder could never be resumed); a folder, FIFO or
// link to /dev/zero named like a rank file was passed over without a word. Each member, named
// like rank 1's file and (for the loop) under a name of no interest: a rerun on 2 ranks and
// --merge-only end with exit 0, every request done once, the rank file named unreadable.
TEST(OwnFolder, NonFilesInTheJobsFolderNeverStopARerunOrTheMerge) {
  const fs::path dir = finished_run("omnidp-own-odd");
  const fs::path out = dir / "out";
  ASSERT_EQ(fs::exists(out / "rank-00001.h5"), false);
  results::testing::make_odd(out / "junk", results::testing::Odd::link_loop);
  for (const auto kind : results::testing::odd_kinds()) {
    SCOPED_TRACE(results::testing::odd_name(kind));
    std::error_code ec;
    fs::remove_all(out / "rank-00001.h5", ec);
    results::testing::make_odd(out / "rank-00001.h5", kind);
    const std::string problem =
        (out / "rank-00001.h5").string() + ": " + results::testing::odd_problem(kind);
    const BatchRun rerun = run_guarded(dir, 2, {});
    EXPECT_EQ(rerun.signal, 0);
    EXPECT_EQ(rerun.exit_code, 0) << rerun.err;
    EXPECT_NE(rerun.err.find("3 already done, skipped"), std::string::npos) << rerun.err;
    EXPECT_NE(rerun.err.find("resume: skipping unreadable " + (out / "rank-00001.h5").string() +
                             " (its requests are generated again): " + problem),
              std::string::npos)
        << rerun.err;
    EXPECT_NE(rerun.err.find("merge: skipping unreadable " + (out / "rank-00001.h5").string() +
                             ": " + problem),
              std::string::npos)
        << rerun.err;
    const BatchRun merged = run_guarded(dir, 0, {"--merge-only", out.string()});
    EXPECT_EQ(merged.exit_code, 0) << merged.err;
    EXPECT_NE(merged.err.find("rank-00001.h5: unreadable rank file, skipped"), std::string::npos)
        << merged.err;
    expect_three_ok(out);
  }
  // A loop named like rank 0's own file: the rerun writes the next segment and the folder
  // resumes.
  fs::remove_all(out / "rank-00001.h5");
  fs::rename(out / "rank-00000.h5", out / "kept.h5");
  results::testing::make_odd(out / "rank-00000.h5", results::testing::Odd::link_loop);
  const BatchRun again = run_guarded(dir, 0, {});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("resume: skipping unreadable " + (out / "rank-00000.h5").string() +
                           " (its requests are generated again): " + (out / "rank-00000.h5").string() +
                           ": " + results::testing::odd_problem(results::testing::Odd::link_loop)),
            std::string::npos)
      << again.err;
  expect_three_ok(out);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace omnidp
