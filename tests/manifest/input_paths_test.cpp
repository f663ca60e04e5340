#include "omnidp/manifest/input_paths.hpp"

#include <gtest/gtest.h>

#include "error_of.hpp"
#include "omnidp/common/error.hpp"
#include "temp_dir.hpp"

namespace omnidp {
namespace {
namespace fs = std::filesystem;

TEST(InputPaths, WithinComparesComponents) {
  EXPECT_TRUE(is_within("/jobs/a/img/x.png", "/jobs/a"));
  EXPECT_TRUE(is_within("/jobs/a", "/jobs/a/"));
  EXPECT_FALSE(is_within("/jobs/ab/x.png", "/jobs/a"));
  EXPECT_FALSE(is_within("/jobs", "/jobs/a"));
}

TEST(InputPaths, ResolvedInsideTheFolderOrRefused) {
  test::TempDir dir;
  const fs::path root = fs::canonical(dir.path());
  fs::create_directories(root / "img");
  EXPECT_EQ(resolve_input_path("img/../img/x.png", root, "m.jsonl", 2, "image"),
            (root / "img" / "x.png").string());
  EXPECT_EQ(
      resolve_input_path((root / "e.safetensors").string(), root, "m.jsonl", 2, "prompt_embeds"),
      (root / "e.safetensors").string());
  EXPECT_EQ(test::error_of<ManifestError>(
                [&] { (void)resolve_input_path("../x.png", root, "m.jsonl", 2, "image"); }),
            "m.jsonl:2:image: path \"../x.png\" leaves the manifest's folder \"" + root.string() +
                "\" (it resolves to \"" + root.parent_path().string() + "/x.png\")");
  // A link out of the folder is followed, and refused.
  fs::create_directory_symlink("/tmp", root / "out");
  EXPECT_NE(test::error_of<ManifestError>([&] {
              (void)resolve_input_path("out/x.png", root, "m.jsonl", 3, "image");
            }).find("leaves the manifest's folder"),
            std::string::npos);
}

}  // namespace
}  // namespace omnidp
