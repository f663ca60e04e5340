#include "omnidp/results/resume.hpp"

#include <algorithm>
#include <map>

#include "omnidp/common/error.hpp"
#include "omnidp/common/log.hpp"
#include "omnidp/config/numerics.hpp"
#include "omnidp/results/result_files.hpp"

namespace omnidp::results {

ResumeScan scan_folder(const std::filesystem::path& dir) {
  struct Done {
    std::string input_key;
    std::filesystem::path file;
    std::string numerics;
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
      auto [it, inserted] =
          done.try_emplace(row.record.id, Done{row.record.input_key, file, row.record.numerics});
      if (!inserted && it->second.input_key != row.record.input_key) {
        throw RuntimeError("id '" + row.record.id + "' is recorded done with input key " +
                           it->second.input_key + " in " + it->second.file.string() +
                           " and with input key " + row.record.input_key + " in " +
                           file.string() + "; the folder mixes two manifests");
      }
    }
  }
  ResumeScan out;
  out.done.reserve(done.size());
  std::map<std::string, ProfileCount> profiles;
  for (auto& [id, d] : done) {
    auto& p = profiles[d.numerics];
    if (p.requests++ == 0 || d.file < p.example_file) p.example_file = d.file;
    out.done.emplace(id, std::move(d.input_key));
  }
  for (auto& [profile, p] : profiles) {
    p.profile = profile;
    out.profiles.push_back(std::move(p));
  }
  std::stable_sort(out.profiles.begin(), out.profiles.end(),
                   [](const ProfileCount& a, const ProfileCount& b) { return a.requests > b.requests; });
  return out;
}

std::unordered_map<std::string, std::string> scan_done(const std::filesystem::path& dir) {
  return scan_folder(dir).done;
}

std::vector<std::string> check_resume_profiles(const ResumeScan& scan,
                                               const std::filesystem::path& dir,
                                               const std::string& current, bool allow_mixed) {
  std::vector<std::string> warnings;
  std::vector<const ProfileCount*> refused;
  for (const auto& p : scan.profiles) {
    const NumericsDifference d = compare_numerics(p.profile, current);
    if (!d.any()) continue;
    const std::string count = std::to_string(p.requests) + " request(s) done in " + dir.string();
    if (!d.numerics()) {
      warnings.push_back("resume: " + count + " were made by another software version (" +
                         describe_difference(p.profile, current) +
                         "), with the same numerics otherwise; they are kept and skipped");
      continue;
    }
    if (allow_mixed) {
      warnings.push_back(
          "resume (--resume-mixed): " + count + " were made with " +
          (d.unknown ? std::string("an unknown numerics profile (a file written before profiles "
                                   "were recorded)")
                     : "numerics profile '" + p.profile + "' (differing: " +
                           describe_difference(p.profile, current) + ")") +
          "; they are kept and skipped, new rows record '" + current + "'");
      continue;
    }
    refused.push_back(&p);
  }
  if (refused.empty()) return warnings;
  const ProfileCount& p = *refused.front();
  std::string message = std::to_string(p.requests) + " request(s) already done here (e.g. in " +
                        p.example_file.filename().string() + ") were made with ";
  if (p.profile.empty()) {
    message += "an unknown numerics profile (written before profiles were recorded)";
  } else {
    message += "numerics profile '" + p.profile + "'";
  }
  message += ", but this run's profile is '" + current + "'";
  if (!p.profile.empty()) message += " (differing: " + describe_difference(p.profile, current) + ")";
  if (refused.size() > 1) {
    message += "; " + std::to_string(refused.size() - 1) + " more profile(s) differ too";
  }
  message +=
      "; resuming would mix videos of two numerics profiles: use a new output.dir, --no-resume "
      "to generate them again, or --resume-mixed to keep them (each row records its profile)";
  throw Error(ErrorKind::config, message, {dir.string()});
}

}  // namespace omnidp::results
