// The numerics profile: its canonical text, parsing, and how two profiles differ.
#include "omnidp/config/numerics.hpp"

#include <gtest/gtest.h>

#include "omnidp/common/version.hpp"

namespace omnidp {
namespace {

TEST(NumericsProfile, CanonicalTextOfTheDefaultsAndOfEveryKey) {
  Config config;
  EXPECT_EQ(numerics_profile(config, "0.1.0 (git abc)"),
            "dtype=fp32;device=cpu;strict=true;attention=auto;kernels=fused;quantization=none;"
            "layout=tp1,sp1,cfg1;software=0.1.0 (git abc)");
  config.model.dtype = DType::bf16;
  config.model.device = DeviceKind::cuda;
  config.determinism.strict = false;
  config.model.attention = AttentionKernel::cudnn;
  config.model.fused_kernels = false;
  EXPECT_EQ(numerics_profile(config, "x;y=z"),
            "dtype=bf16;device=cuda;strict=false;attention=cudnn;kernels=eager;quantization=none;"
            "layout=tp1,sp1,cfg1;software=x,y,z");
  config.model.quantization = Quantization::fp8;
  config.parallel.tensor_parallel_size = 2;
  config.parallel.sequence_parallel_size = 4;
  config.parallel.cfg_parallel_size = 2;
  EXPECT_EQ(numerics_profile(config, "v"),
            "dtype=bf16;device=cuda;strict=false;attention=cudnn;kernels=eager;quantization=fp8;"
            "layout=tp2,sp4,cfg2;software=v");
  EXPECT_EQ(numerics_profile(Config{}),
            numerics_profile(Config{}, std::string(version()) + " (git " + git_revision() + ")"));
}

TEST(NumericsProfile, SettingsThatDoNotChangeBytesDoNotChangeTheProfile) {
  Config a;
  Config b;
  b.model.torch_threads = 4;
  b.parallel.data_parallel_size = 3;
  b.output.dir = "elsewhere";
  b.model.offload_text_encoder = false;
  EXPECT_EQ(numerics_profile(a, "v"), numerics_profile(b, "v"));
}

// Resuming a folder with another group layout mixes bytes (up to 2 levels on the CPU): the
// layout is a numerics key; rows written before it existed were single-rank groups.
TEST(NumericsProfile, TheGroupLayoutIsAKeyAndOlderRowsReadAsSingleRank) {
  Config single;
  Config sp2;
  sp2.parallel.sequence_parallel_size = 2;
  const auto a = numerics_profile(single, "v");
  const auto b = numerics_profile(sp2, "v");
  EXPECT_EQ(compare_numerics(a, b).keys, (std::vector<std::string>{"layout"}));
  EXPECT_EQ(describe_difference(a, b), "layout (tp1,sp1,cfg1 -> tp1,sp2,cfg1)");
  const std::string before_the_key =
      "dtype=fp32;device=cpu;strict=true;attention=auto;kernels=fused;quantization=none;software=v";
  EXPECT_FALSE(compare_numerics(before_the_key, a).any());
  EXPECT_EQ(compare_numerics(before_the_key, b).keys, (std::vector<std::string>{"layout"}));
}

// A tiled VAE decode (model.vae_tiling) gives other bytes: `vae=tiled` after the layout; rows
// without the key were decoded untiled.
TEST(NumericsProfile, ATiledVaeIsAKeyAndOlderRowsReadAsUntiled) {
  Config untiled;
  Config tiled;
  tiled.model.vae_tiling = true;
  const auto a = numerics_profile(untiled, "v");
  const auto b = numerics_profile(tiled, "v");
  EXPECT_EQ(b,
            "dtype=fp32;device=cpu;strict=true;attention=auto;kernels=fused;quantization=none;"
            "layout=tp1,sp1,cfg1;vae=tiled;software=v");
  EXPECT_EQ(a.find("vae="), std::string::npos);
  EXPECT_EQ(compare_numerics(a, b).keys, (std::vector<std::string>{"vae"}));
  EXPECT_EQ(describe_difference(a, b), "vae (untiled -> tiled)");
  tiled.generation.cache.policy = CachePolicy::taylorseer;
  const auto c = numerics_profile(tiled, "v");
  EXPECT_LT(c.find(";vae=tiled;"), c.find(";cache="));
}

TEST(NumericsProfile, ParsesItsOwnTextAndToleratesOddItems) {
  const auto m = parse_numerics("dtype=bf16;device=cuda;software=0.1 (git a)");
  ASSERT_EQ(m.size(), 3U);
  EXPECT_EQ(m.at("dtype"), "bf16");
  EXPECT_EQ(m.at("software"), "0.1 (git a)");
  EXPECT_TRUE(parse_numerics("").empty());
  const auto odd = parse_numerics("flag;;k=");
  ASSERT_EQ(odd.size(), 2U);
  EXPECT_EQ(odd.at("flag"), "");
  EXPECT_EQ(odd.at("k"), "");
}

TEST(NumericsProfile, DifferencesNameTheKeysAndSeparateTheSoftwareVersion) {
  Config fp32;
  Config bf16;
  bf16.model.dtype = DType::bf16;
  bf16.determinism.strict = false;
  const std::string a = numerics_profile(fp32, "1.0");
  const std::string b = numerics_profile(bf16, "1.0");

  const NumericsDifference same = compare_numerics(a, a);
  EXPECT_FALSE(same.any());
  EXPECT_EQ(describe_difference(a, a), "");

  const NumericsDifference d = compare_numerics(a, b);
  EXPECT_TRUE(d.numerics());
  EXPECT_FALSE(d.software);
  EXPECT_FALSE(d.unknown);
  EXPECT_EQ(d.keys, (std::vector<std::string>{"dtype", "strict"}));
  EXPECT_EQ(describe_difference(a, b), "dtype (fp32 -> bf16), strict (true -> false)");

  const std::string newer = numerics_profile(fp32, "1.1");
  const NumericsDifference v = compare_numerics(a, newer);
  EXPECT_FALSE(v.numerics());
  EXPECT_TRUE(v.software);
  EXPECT_TRUE(v.any());
  EXPECT_EQ(describe_difference(a, newer), "software (1.0 -> 1.1)");

  const NumericsDifference u = compare_numerics("", a);
  EXPECT_TRUE(u.unknown);
  EXPECT_TRUE(u.numerics());
  EXPECT_EQ(describe_difference("", a), "unknown profile -> " + a);
  EXPECT_EQ(describe_difference(a, ""), a + " -> unknown profile");

  // A key only one side has (a later profile version) counts as a difference.
  const NumericsDifference extra = compare_numerics(a, a + ";tp_layout=2");
  EXPECT_EQ(extra.keys, (std::vector<std::string>{"tp_layout"}));
  EXPECT_EQ(describe_difference(a, a + ";tp_layout=2"), "tp_layout ( -> 2)");
}

}  // namespace
}  // namespace omnidp

namespace omnidp {
namespace {

// A step cache changes the bytes: the profile names it with its parameters; a profile without
// the key (the rows before it, or no cache) reads as cache=off.
TEST(NumericsProfile, AStepCacheIsAKeyWithItsParameters) {
  Config off;
  Config ts;
  ts.generation.cache.policy = CachePolicy::taylorseer;
  const auto a = numerics_profile(off, "v");
  const auto b = numerics_profile(ts, "v");
  EXPECT_EQ(a.find("cache="), std::string::npos);
  EXPECT_NE(b.find(";cache=taylorseer(cache_interval 5, disable_cache_before_step 3, max_order "
                   "1);software=v"),
            std::string::npos);
  EXPECT_EQ(compare_numerics(a, b).keys, (std::vector<std::string>{"cache"}));
  Config ts2 = ts;
  ts2.generation.cache.cache_interval = 4;
  EXPECT_EQ(compare_numerics(b, numerics_profile(ts2, "v")).keys,
            (std::vector<std::string>{"cache"}));
  Config mag;
  mag.generation.cache.policy = CachePolicy::magcache;
  mag.generation.cache.mag_ratios = {1.0, 0.98};
  EXPECT_NE(numerics_profile(mag, "v").find("cache=magcache(threshold 0.06, max_skip_steps 3, "
                                            "retention_ratio 0.2, mag_ratios 2:"),
            std::string::npos);
  Config other = mag;
  other.generation.cache.mag_ratios = {1.0, 0.97};
  EXPECT_NE(numerics_profile(mag, "v"), numerics_profile(other, "v"));
  EXPECT_FALSE(compare_numerics(a, a + ";cache=off").any());
}

TEST(NumericsProfile, ALinesOwnCacheIsMarkedAndComparedByItsValue) {
  Config ts;
  ts.generation.cache.policy = CachePolicy::taylorseer;
  StepCacheConfig fb;
  fb.policy = CachePolicy::first_block;
  const auto line_fb = numerics_profile(ts, "v", fb);
  EXPECT_NE(line_fb.find(";cache=line:first_block(threshold 0.05);software=v"), std::string::npos)
      << line_fb;
  // A line that sets the cache off says so, even where the job's is off too.
  const auto line_off = numerics_profile(Config{}, "v", StepCacheConfig{});
  EXPECT_NE(line_off.find(";cache=line:off;software=v"), std::string::npos) << line_off;
  EXPECT_TRUE(cache_from_line(line_fb));
  EXPECT_TRUE(cache_from_line(line_off));
  EXPECT_FALSE(cache_from_line(numerics_profile(ts, "v")));
  EXPECT_FALSE(cache_from_line(""));
  // Compared by what ran, wherever it was set: the same computation is no difference.
  Config job_fb;
  job_fb.generation.cache = fb;
  EXPECT_FALSE(compare_numerics(line_fb, numerics_profile(job_fb, "v")).any());
  EXPECT_FALSE(compare_numerics(line_off, numerics_profile(Config{}, "v")).any());
  EXPECT_EQ(compare_numerics(line_fb, numerics_profile(ts, "v")).keys,
            (std::vector<std::string>{"cache"}));
  EXPECT_EQ(
      describe_difference(line_off, numerics_profile(ts, "v")),
      "cache (off -> taylorseer(cache_interval 5, disable_cache_before_step 3, max_order 1))");
}

}  // namespace
}  // namespace omnidp
