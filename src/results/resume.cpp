#include "omnidp/results/resume.hpp"

#include "omnidp/common/error.hpp"
#include "omnidp/common/log.hpp"
#include "omnidp/results/result_files.hpp"

namespace omnidp::results {

std::unordered_map<std::string, std::string> scan_done(const std::filesystem::path& dir) {
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
      // A live process holds HDF5's lock: the previous job's rank still exiting after mpirun
      // returned (its file is final), or this job's own writer creating its new segment while
      // rank 0 scans (nothing in it is done yet). Read what is flushed, without the lock.
      try {
        rows = read_stored_rows(file, 0, true);
        log_info("resume: " + file.string() + " is locked by a live process; read without the lock");
      } catch (const Error& again) {
        log_info("resume: " + file.string() + " is locked by a live process and not readable; "
                 "not read: " + again.what());
        continue;
      }
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
