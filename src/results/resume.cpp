#include "omnidp/results/resume.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#include "omnidp/common/error.hpp"
#include "omnidp/common/log.hpp"
#include "omnidp/results/result_files.hpp"

namespace omnidp::results {

std::string locked_file_message(const std::filesystem::path& file) {
  (void)file;
  return "is locked by another process (HDF5 file lock: 'unable to lock the file, errno = 11'): "
         "is an earlier run still running on this folder, or are its ranks still exiting? Let "
         "it end (or use another output folder), then run again";
}

std::unordered_map<std::string, std::string> scan_done(const std::filesystem::path& dir,
                                                       double lock_wait_s) {
  struct Done {
    std::string input_key;
    std::filesystem::path file;
  };
  std::unordered_map<std::string, Done> done;
  for (const auto& file : list_rank_files(dir)) {
    std::vector<StoredRow> rows;
    try {
      rows = read_stored_rows(file);
    } catch (const Hdf5Error& e) {
      if (!is_locked_by_writer(file)) {
        log_warn("resume: skipping unreadable " + file.string() +
                 " (its requests are generated again): " + e.what());
        continue;
      }
      // A live process holds HDF5's lock: an earlier run still writing this folder, or its
      // rank still exiting after mpirun returned (that one lets go within seconds).
      log_info("resume: " + file.string() + " is locked by another process; waiting up to " +
               std::to_string(static_cast<int>(lock_wait_s)) + " s for it to let go");
      const auto until = std::chrono::steady_clock::now() +
                         std::chrono::duration<double>(std::max(0.0, lock_wait_s));
      while (is_locked_by_writer(file) && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (is_locked_by_writer(file)) throw InputError(file.string(), locked_file_message(file));
      rows = read_stored_rows(file);
    }
    for (auto& row : rows) {
      if (row.record.status != RequestStatus::ok) continue;
      if (row.video_expected && !row.video_present) continue;  // writer died in between
      auto [it, inserted] = done.try_emplace(row.record.id, Done{row.record.input_key, file});
      if (!inserted && it->second.input_key != row.record.input_key) {
        throw RuntimeError("id '" + row.record.id + "' is recorded done with input key " +
                           it->second.input_key + " in " + it->second.file.string() +
                           " and with input key " + row.record.input_key + " in " +
                           file.string() + "; the folder mixes two manifests");
      }
    }
  }
  std::unordered_map<std::string, std::string> out;
  out.reserve(done.size());
  for (auto& [id, d] : done) out.emplace(id, std::move(d.input_key));
  return out;
}

}  // namespace omnidp::results
