#include "omnidp/models/weights/safetensors.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "fixtures.hpp"
#include "omnidp/common/error.hpp"
#include "test_files.hpp"

namespace omnidp::models {
namespace {

using testing::error_of;
using testing::fresh_dir;

bool bitwise_equal(const torch::Tensor& a, const torch::Tensor& b) {
  return a.scalar_type() == b.scalar_type() && a.sizes() == b.sizes() &&
         std::memcmp(a.contiguous().data_ptr(), b.contiguous().data_ptr(),
                     static_cast<std::size_t>(a.numel()) * a.element_size()) == 0;
}

TEST(Safetensors, RoundTripKeepsDtypesShapesAndBytes) {
  const auto dir = fresh_dir("rt");
  const auto f32 = torch::arange(12, torch::kFloat32).reshape({3, 4}) / 7;
  const auto i64 = torch::tensor(std::vector<std::int64_t>{-5, 0, std::int64_t{1} << 40});
  const auto flags = torch::tensor({true, false, true});
  const auto strided = torch::arange(6, torch::kFloat64).reshape({2, 3}).t();  // non-contiguous
  save_safetensors(
      dir / "a.safetensors",
      {{"z.f32", f32}, {"i", i64}, {"flags", flags}, {"t", strided}, {"empty", torch::zeros({0, 3})}},
      {{"format", "pt"}});
  const SafetensorsFile file(dir / "a.safetensors");
  EXPECT_EQ(file.names(), (std::vector<std::string>{"empty", "flags", "i", "t", "z.f32"}));
  EXPECT_EQ(file.header().metadata.at("format"), "pt");
  EXPECT_EQ(file.header().data_offset % 8, 0U);
  EXPECT_EQ(file.meta("z.f32").dtype, SafetensorsDtype::f32);
  EXPECT_EQ(file.meta("z.f32").shape, (std::vector<std::int64_t>{3, 4}));
  EXPECT_TRUE(bitwise_equal(file.tensor("z.f32"), f32));
  EXPECT_TRUE(bitwise_equal(file.tensor("i", torch::kInt64), i64));
  EXPECT_TRUE(bitwise_equal(file.tensor("flags", torch::kBool), flags));
  EXPECT_TRUE(bitwise_equal(file.tensor("t", torch::kFloat64), strided.contiguous()));
  EXPECT_EQ(file.tensor("empty").sizes(), (std::vector<std::int64_t>{0, 3}));
  EXPECT_EQ(file.raw("z.f32").size(), 48U);
  EXPECT_TRUE(file.contains("i"));
  EXPECT_FALSE(file.contains("nope"));
  const auto msg = error_of([&] { (void)file.meta("nope"); });
  EXPECT_NE(msg.find("no tensor named 'nope'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("a.safetensors"), std::string::npos) << msg;
}

TEST(Safetensors, Bf16AndFp16ConvertToFp32Exactly) {
  const auto dir = fresh_dir("conv");
  // Values exactly representable in bf16 and fp16 (small integers over powers of two), and
  // bf16 values outside fp16's range.
  const auto base = torch::tensor({0.0F, -0.0F, 1.0F, -2.5F, 0.15625F, 1024.0F, -3.0F / 64.0F});
  const auto big = torch::tensor({1.0e30F, -3.0e-30F, 65504.0F * 4});
  save_safetensors(dir / "c.safetensors", {{"bf", base.to(torch::kBFloat16)},
                                           {"hf", base.to(torch::kFloat16)},
                                           {"bigbf", big.to(torch::kBFloat16)}});
  const SafetensorsFile file(dir / "c.safetensors");
  EXPECT_TRUE(bitwise_equal(file.tensor("bf"), base));
  EXPECT_TRUE(bitwise_equal(file.tensor("hf"), base));
  EXPECT_TRUE(bitwise_equal(file.tensor("bigbf"), big.to(torch::kBFloat16).to(torch::kFloat32)));
  EXPECT_EQ(file.tensor("bf", torch::kBFloat16).scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(bitwise_equal(file.tensor("bf", torch::kFloat16), base.to(torch::kFloat16)));
}

TEST(Safetensors, Fp32ToBf16RoundsToNearestEven) {
  const auto dir = fresh_dir("rne");
  // 1 + 2^-8 is halfway between two bf16 values: ties to even gives 1.0; 1 + 3*2^-8 -> 1 + 2^-6.
  const auto values = torch::tensor({1.0F + 1.0F / 256, 1.0F + 3.0F / 256, 1.0F + 1.0F / 128});
  save_safetensors(dir / "r.safetensors", {{"v", values}});
  const auto bf =
      SafetensorsFile(dir / "r.safetensors").tensor("v", torch::kBFloat16).to(torch::kFloat32);
  EXPECT_EQ(bf[0].item<float>(), 1.0F);
  EXPECT_EQ(bf[1].item<float>(), 1.0F + 1.0F / 64);
  EXPECT_EQ(bf[2].item<float>(), 1.0F + 1.0F / 128);
}

TEST(Safetensors, TruncatedFileNamesFileAndTensor) {
  const auto dir = fresh_dir("trunc");
  save_safetensors(dir / "t.safetensors",
                   {{"first", torch::ones({4})}, {"second", torch::ones({64})}});
  auto bytes = testing::read_bytes(dir / "t.safetensors");
  bytes.resize(bytes.size() - 10);
  testing::write_bytes(dir / "t.safetensors", bytes);
  const auto msg = error_of([&] { (void)SafetensorsFile(dir / "t.safetensors"); });
  EXPECT_NE(msg.find((dir / "t.safetensors").string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("tensor 'second'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("file truncated"), std::string::npos) << msg;
}

TEST(Safetensors, MissingEmptyAndDirectory) {
  const auto dir = fresh_dir("bad");
  EXPECT_NE(error_of([&] { (void)SafetensorsFile(dir / "none.safetensors"); }).find("cannot open"),
            std::string::npos);
  testing::write_bytes(dir / "empty.safetensors", "");
  EXPECT_NE(error_of([&] {
              (void)SafetensorsFile(dir / "empty.safetensors");
            }).find("file is 0 bytes, shorter than the 8-byte header length"),
            std::string::npos);
  EXPECT_NE(error_of([&] { (void)SafetensorsFile(dir); }).find("not a regular file"),
            std::string::npos);
}

TEST(Safetensors, LyingHeaderIsRejected) {
  const auto dir = fresh_dir("lie");
  // The header claims 64 floats but the file holds 4.
  const std::string header = R"({"w":{"dtype":"F32","shape":[64],"data_offsets":[0,256]}})";
  std::string bytes(8, '\0');
  bytes[0] = static_cast<char>(header.size());
  bytes += header + std::string(16, '\0');
  testing::write_bytes(dir / "lie.safetensors", bytes);
  const auto msg = error_of([&] { (void)SafetensorsFile(dir / "lie.safetensors"); });
  EXPECT_NE(msg.find("tensor 'w': data_offsets [0, 256] exceed the data section of 16 bytes"),
            std::string::npos)
      << msg;
}

TEST(Safetensors, MoveKeepsMappingValid) {
  const auto dir = fresh_dir("move");
  save_safetensors(dir / "m.safetensors", {{"x", torch::full({5}, 3.0F)}});
  SafetensorsFile a(dir / "m.safetensors");
  SafetensorsFile b(std::move(a));
  EXPECT_TRUE(torch::equal(b.tensor("x"), torch::full({5}, 3.0F)));
  MappedFile m1(dir / "m.safetensors");
  const auto size = m1.size();
  MappedFile m2 = std::move(m1);
  EXPECT_EQ(m2.size(), size);
  EXPECT_EQ(m1.size(), 0U);  // NOLINT(bugprone-use-after-move): moved-from state is specified
}

TEST(Safetensors, SaveRejectsDuplicatesAndUnsupportedDtypes) {
  const auto dir = fresh_dir("save");
  EXPECT_NE(
      error_of([&] {
        save_safetensors(dir / "d.safetensors", {{"a", torch::ones({1})}, {"a", torch::ones({1})}});
      }).find("duplicate tensor name 'a'"),
      std::string::npos);
  EXPECT_NE(
      error_of([&] {
        save_safetensors(dir / "c.safetensors", {{"c", torch::ones({1}, torch::kComplexFloat)}});
      }).find("cannot be stored in safetensors"),
      std::string::npos);
}

TEST(Safetensors, FixtureFilesLoad) {
  OMNIDP_REQUIRE_FIXTURES();
  const std::filesystem::path root = omnidp::test::fixtures_dir();
  int files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (entry.path().extension() != ".safetensors") continue;
    const SafetensorsFile file(entry.path());
    ASSERT_FALSE(file.names().empty()) << entry.path();
    for (const auto& name : file.names()) {
      const auto t = file.tensor(name);
      EXPECT_EQ(t.scalar_type(), torch::kFloat32);
      EXPECT_EQ(t.sizes(), at::IntArrayRef(file.meta(name).shape)) << name;
      EXPECT_TRUE(torch::isfinite(t).all().item<bool>()) << entry.path() << ": " << name;
    }
    ++files;
  }
  EXPECT_GE(files, 18);
}

}  // namespace
}  // namespace omnidp::models
