#include "omnidp/models/config_json.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>

#include "error_of.hpp"
#include "omnidp/common/error.hpp"
#include "temp_dir.hpp"

namespace omnidp::models {
namespace {

namespace fs = std::filesystem;

class ConfigJson : public ::testing::Test {
 protected:
  fs::path write(const std::string& name, const std::string& text) const {
    return tmp_.write(name, text);
  }
  omnidp::test::TempDir tmp_;
  fs::path dir_ = tmp_.path();
};

std::string weights_error(const std::function<void()>& f) {
  return omnidp::test::error_of<WeightsError>(f);
}

TEST_F(ConfigJson, ReadsAnyJsonValue) {
  EXPECT_EQ(read_json(write("a.json", R"({"x": [1, 2]})")),
            nlohmann::json::parse(R"({"x": [1, 2]})"));
  EXPECT_EQ(read_json(write("b.json", "[3]")), nlohmann::json::array({3}));
  EXPECT_EQ(read_json_object(write("c.json", R"({"k": "v"})")).at("k"), "v");
}

TEST_F(ConfigJson, EveryFaultIsAWeightsErrorNamingTheFile) {
  const auto missing = dir_ / "none.json";
  EXPECT_EQ(weights_error([&] { (void)read_json(missing); }),
            missing.string() + ": cannot open JSON file");
  const auto bad = write("bad.json", "{not json");
  EXPECT_EQ(weights_error([&] {
              (void)read_json(bad);
            }).rfind(bad.string() + ": invalid JSON: [json.exception.parse_error", 0),
            0U);
  const auto list = write("list.json", "[1]");
  EXPECT_EQ(weights_error([&] { (void)read_json_object(list); }),
            list.string() + ": not a JSON object");
}

TEST(ConfigJsonText, ParsesAnObjectAndNamesTheOrigin) {
  EXPECT_EQ(parse_json_object(R"({"a": 1})", "cfg").at("a"), 1);
  EXPECT_EQ(weights_error([] { (void)parse_json_object("3", "cfg"); }), "cfg: not a JSON object");
  EXPECT_EQ(
      weights_error([] { (void)parse_json_object("{", "cfg"); }).rfind("cfg: invalid JSON: ", 0), 0U);
}

}  // namespace
}  // namespace omnidp::models
