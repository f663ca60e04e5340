// The startup check that every rank sees the same output folder, over an InProcessNetwork: each
// simulated rank (a thread) runs check_shared_output_dir with its own view of output.dir.
#include "omnidp/runtime/shared_dir.hpp"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <thread>

#include "job_test_support.hpp"

namespace omnidp::runtime {
namespace {

using namespace omnidp::runtime::testing;

struct Outcome {
  bool threw = false;
  ErrorKind kind = ErrorKind::runtime;
  ExitCode code = ExitCode::ok;
  std::string what;
};

struct RankView {
  fs::path dir;
  std::string host;
  std::function<bool()> setup;  // runs on the rank's thread first
};

std::vector<Outcome> run_check(const std::vector<RankView>& views) {
  InProcessNetwork net(static_cast<int>(views.size()));
  std::vector<Outcome> out(views.size());
  std::vector<std::thread> threads;
  for (std::size_t r = 0; r < views.size(); ++r) {
    threads.emplace_back([&, r] {
      // A rank whose setup failed still takes part, or the others would wait for it.
      if (views[r].setup) (void)views[r].setup();
      try {
        check_shared_output_dir(net.endpoint(static_cast<int>(r)), views[r].dir, views[r].host);
      } catch (const Error& e) {
        out[r] = Outcome{true, e.kind(), e.exit_code(), e.what()};
      }
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(SharedOutputDir, EveryRankSeesTheTokenAndItIsRemoved) {
  TempDir tmp("shared-dir-ok");
  fs::create_directories(tmp.path() / "out");
  std::vector<RankView> views(4, RankView{tmp.path() / "out", "nodeA", {}});
  for (const auto& o : run_check(views)) EXPECT_FALSE(o.threw) << o.what;
  EXPECT_TRUE(entries(tmp.path() / "out").empty());
}

// output.dir does not exist yet: the token goes into its nearest existing ancestor, and the
// check creates nothing (a bad manifest must still leave no output folder).
TEST(SharedOutputDir, AMissingFolderIsProbedInItsNearestAncestorAndNotCreated) {
  TempDir tmp("shared-dir-missing");
  const fs::path dir = tmp.path() / "a" / "b";
  EXPECT_EQ(shared_dir_probe(dir), tmp.path());
  EXPECT_EQ(shared_dir_probe(tmp.path() / "x" / ".." / "y/"), tmp.path());
  std::vector<RankView> views(3, RankView{dir, "nodeA", {}});
  for (const auto& o : run_check(views)) EXPECT_FALSE(o.threw) << o.what;
  EXPECT_TRUE(entries(tmp.path()).empty());
}

TEST(SharedOutputDir, OneRankNeedsNoCheck) {
  TempDir tmp("shared-dir-one");
  const auto out = run_check({RankView{tmp.path(), "nodeA", {}}});
  EXPECT_FALSE(out[0].threw) << out[0].what;
}

// A rank whose output.dir resolves to another existing folder (another working directory on
// its node, a folder that exists only there) stops every rank with the same error.
TEST(SharedOutputDir, ARankThatResolvesAnotherFolderStopsEveryRank) {
  TempDir tmp("shared-dir-other");
  fs::create_directories(tmp.path() / "out");
  fs::create_directories(tmp.path() / "local" / "out");
  std::vector<RankView> views(3, RankView{tmp.path() / "out", "nodeA", {}});
  views[2] = RankView{tmp.path() / "local" / "out", "nodeB", {}};
  const auto out = run_check(views);
  const std::string token_prefix = (tmp.path() / "out" / ".omnidp-shared-").string();
  for (const auto& o : out) {
    ASSERT_TRUE(o.threw);
    EXPECT_EQ(o.kind, ErrorKind::config);
    EXPECT_EQ(o.code, ExitCode::usage);
    EXPECT_EQ(o.what, out[0].what);  // the same message on every rank
  }
  const std::string& w = out[0].what;
  EXPECT_EQ(w.rfind("output.dir: the output folder '" + (tmp.path() / "out").string() +
                        "' is not shared by every rank: rank 2 on host nodeB does not see the "
                        "token file '" +
                        token_prefix,
                    0),
            0U)
      << w;
  EXPECT_NE(w.find("' that rank 0 on host nodeA wrote (its nearest existing folder of '" +
                   (tmp.path() / "local" / "out").string() + "' is '" +
                   (tmp.path() / "local" / "out").string() + "', rank 0's is '" +
                   (tmp.path() / "out").string() +
                   "'). output.dir must be on a file system "
                   "shared by all nodes (not a node-local folder such as /tmp or a local "
                   "scratch disk)"),
            std::string::npos)
      << w;
  EXPECT_EQ(w.find("rank 1"), std::string::npos) << w;
  EXPECT_TRUE(entries(tmp.path() / "out").empty());
}

// The real case: the same path, but another file system behind it on one "node". The rank's
// thread gets its own mount namespace with a tmpfs over the folder (needs CAP_SYS_ADMIN).
TEST(SharedOutputDir, ANodeLocalMountAtTheSamePathStopsEveryRank) {
  TempDir tmp("shared-dir-mount");
  const fs::path dir = tmp.path() / "out";
  fs::create_directories(dir);
  bool permitted = true;
  std::vector<RankView> views(3, RankView{dir, "nodeA", {}});
  views[1].host = "nodeB";
  views[1].setup = [&] {
    // The mount namespace is this thread's only; private, so the tmpfs never propagates out.
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("tmpfs", dir.c_str(), "tmpfs", 0, nullptr) != 0) {
      permitted = false;
      return false;
    }
    return true;
  };
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for a private mount namespace";
  const auto out = run_check(views);
  if (!permitted) {
    GTEST_SKIP() << "unshare(CLONE_NEWNS) or mount is not permitted here";
  }
  for (const auto& o : out) {
    ASSERT_TRUE(o.threw);
    EXPECT_EQ(o.code, ExitCode::usage);
    EXPECT_EQ(o.what, out[0].what);
  }
  EXPECT_NE(out[0].what.find("rank 1 on host nodeB does not see the token file '" +
                             (dir / ".omnidp-shared-").string()),
            std::string::npos)
      << out[0].what;
  EXPECT_NE(out[0].what.find("' that rank 0 on host nodeA wrote (No such file or directory). "
                             "output.dir must be on a file system shared by all nodes"),
            std::string::npos)
      << out[0].what;
  EXPECT_TRUE(entries(dir).empty());
}

}  // namespace
}  // namespace omnidp::runtime
