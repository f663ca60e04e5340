#include "omnidp/models/layers/rng.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <regex>

#include "fixtures.hpp"
#include "omnidp/models/weights/safetensors.hpp"

namespace omnidp::models {
namespace {

TEST(Rng, MatchesTorchCpuGeneratorFixtureBitForBit) {
  OMNIDP_REQUIRE_FIXTURES();
  const SafetensorsFile io(omnidp::test::fixture("diffusers-ref/rng_cpu_randn/io.safetensors"));
  const std::regex pattern(R"(^randn_seed([0-9]+)_.*$)");
  int checked = 0;
  for (const auto& name : io.names()) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(name, m, pattern)) << name;
    const auto expected = io.tensor(name);
    const auto ours = randn_cpu(expected.sizes(), std::stoull(m[1].str()));
    ASSERT_EQ(ours.sizes(), expected.sizes());
    EXPECT_EQ(std::memcmp(ours.data_ptr(), expected.data_ptr(),
                          sizeof(float) * static_cast<std::size_t>(ours.numel())),
              0)
        << name;
    ++checked;
  }
  EXPECT_EQ(checked, 6);
}

TEST(Rng, IndependentOfGlobalState) {
  const auto a = randn_cpu({3, 5}, 9);
  torch::manual_seed(123);
  (void)torch::randn({100});
  const auto b = randn_cpu({3, 5}, 9);
  EXPECT_TRUE(torch::equal(a, b));
  EXPECT_FALSE(torch::equal(a, randn_cpu({3, 5}, 10)));
  EXPECT_EQ(a.scalar_type(), torch::kFloat32);
  EXPECT_TRUE(a.device().is_cpu());
}

}  // namespace
}  // namespace omnidp::models
