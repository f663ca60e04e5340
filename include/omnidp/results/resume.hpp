#pragma once
// The resume scan (docs/results.md, "Resume"): what an output folder already holds. HDF5-free
// header. Called by the coordinator (rank 0) at start, before work is handed out.

#include <cstddef>
#include <filesystem>
#include <string>
#include <unordered_map>
#include <vector>

namespace omnidp::results {

// How many of the done requests one numerics profile made ("" = unknown: rows of files
// written before the column).
struct ProfileCount {
  std::string profile;
  std::size_t requests = 0;
  std::filesystem::path example_file;  // one rank file holding such rows
};

// What an output folder holds for a resume: the done requests and their numerics profiles.
struct ResumeScan {
  std::unordered_map<std::string, std::string> done;  // id -> input_key
  std::vector<ProfileCount> profiles;  // distinct profiles of `done`, most requests first
  // With `verify`: the ok rows whose stored video was re-hashed, and those whose hash did not
  // match their video_sha256 (not done: generated again).
  std::size_t verified = 0;
  std::size_t verify_mismatches = 0;
};

// id -> input_key of every request recorded ok in any <dir>/rank-*.h5 (of any earlier world
// size or run segment) whose video is present when the file stores videos, and reads back
// (table.hpp's check_stored_video; a row whose video does not is generated again, with one
// warning). Files left unclosed by a killed process are read as of their last flush. A file that
// cannot be opened at all is skipped with a warning (its requests are generated again). A file that
// a live process holds locked (HDF5's flock) is waited for up to `lock_wait_s` (a rank of the
// previous job still exiting after mpirun returned lets go within seconds); still locked, it is an
// InputError (exit 2) naming the file and the likely cause: an earlier run still running on this
// folder. An id recorded ok more than once counts the row the merge chooses (select_rows: the
// newest end_time, then the higher attempt, then the later file), whatever its input key: after
// --no-resume over a changed manifest the new rows supersede the old ones (one info line).
// A missing folder gives an empty map. `verify` (omni-dp-batch --verify): every ok row's stored
// video is also read whole and re-hashed; one whose SHA-256 differs from its video_sha256 is not
// done (one warning naming the file, the id and both hashes), so the run generates it again.
[[nodiscard]] ResumeScan scan_folder(const std::filesystem::path& dir, double lock_wait_s = 10.0,
                                     bool verify = false);
// scan_folder(dir, lock_wait_s).done.
[[nodiscard]] std::unordered_map<std::string, std::string> scan_done(const std::filesystem::path& dir,
                                                                     double lock_wait_s = 10.0);

// The resume rule for numerics profiles (docs/reliability.md): done requests made with a
// profile other than `current` (config/numerics.hpp) stop the job with an Error of kind config
// (exit 2) naming both profiles and the differing keys, unless `allow_mixed`
// (omni-dp-batch --resume-mixed). The unknown profile ("") counts as different. A difference
// in the software version alone is no error. Returns the warnings to print (software-only
// differences; the profiles --resume-mixed accepted).
[[nodiscard]] std::vector<std::string> check_resume_profiles(const ResumeScan& scan,
                                                             const std::filesystem::path& dir,
                                                             const std::string& current,
                                                             bool allow_mixed);

}  // namespace omnidp::results
