// output.file_locking: the decision from statfs f_type values (injected), and the process-wide
// switch that every HDF5 file access follows.
#include "omnidp/results/file_locking.hpp"

#include <gtest/gtest.h>

#include <filesystem>

namespace omnidp::results {
namespace {

TEST(FileLocking, AutoTurnsItOffOnTheKnownBadFileSystemsOnly) {
  std::string why;
  EXPECT_FALSE(decide_file_locking(FileLocking::automatic, 0x0BD00BD0, &why));
  EXPECT_EQ(why, "Lustre (statfs f_type 0x0BD00BD0)");
  EXPECT_FALSE(decide_file_locking(FileLocking::automatic, 0x47504653, &why));
  EXPECT_EQ(why, "GPFS (IBM Spectrum Scale) (statfs f_type 0x47504653)");
  EXPECT_FALSE(decide_file_locking(FileLocking::automatic, 0x6969, &why));
  EXPECT_EQ(why, "NFS (statfs f_type 0x00006969)");
  for (const std::uint64_t magic :
       {0xFF534D42ULL, 0xFE534D42ULL, 0x19830326ULL, 0x00C36400ULL, 0x65735546ULL}) {
    EXPECT_FALSE(decide_file_locking(FileLocking::automatic, magic)) << std::hex << magic;
  }
  // ext4, xfs, tmpfs, btrfs: locking works.
  for (const std::uint64_t magic : {0xEF53ULL, 0x58465342ULL, 0x01021994ULL, 0x9123683EULL}) {
    EXPECT_TRUE(decide_file_locking(FileLocking::automatic, magic)) << std::hex << magic;
    EXPECT_FALSE(locking_unsafe_file_system(magic).has_value());
  }
  // A 64-bit f_type with the magic in its low word (statfs on 64-bit Linux sign-extends).
  EXPECT_FALSE(decide_file_locking(FileLocking::automatic, 0xFFFFFFFFFF534D42ULL));
}

TEST(FileLocking, OnAndOffForceIt) {
  EXPECT_TRUE(decide_file_locking(FileLocking::on, 0x0BD00BD0));
  EXPECT_FALSE(decide_file_locking(FileLocking::off, 0xEF53));
}

TEST(FileLocking, ConfigureAppliesTheDecisionProcessWide) {
  const auto dir = std::filesystem::temp_directory_path() / "omnidp-locking-not-there" / "x";
  EXPECT_FALSE(configure_file_locking(FileLocking::off, dir));  // a missing folder: its parent
  EXPECT_FALSE(file_locking_enabled());
  EXPECT_TRUE(configure_file_locking(FileLocking::on, dir));
  EXPECT_TRUE(file_locking_enabled());
}

}  // namespace
}  // namespace omnidp::results
