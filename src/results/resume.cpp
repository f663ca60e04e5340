#include "omnidp/results/resume.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "omnidp/common/error.hpp"
#include "omnidp/common/log.hpp"
#include "omnidp/config/numerics.hpp"
#include "omnidp/results/result_files.hpp"

namespace omnidp::results {

ResumeScan scan_folder(const std::filesystem::path& dir, double lock_wait_s, bool verify) {
  // One map, id -> input_key, filled while the files stream by (a file is never whole in
  // memory), and beside it the merge's ordering keys of the row each id counts (keyed by the
  // address of the id in `done`, whose nodes never move: no second copy of the ids).
  ResumeScan out;
  struct Counted {
    double end_time = 0.0;
    int attempt = 0;
    std::size_t file_order = 0;
    std::size_t profile = 0;  // index into `profiles`
  };
  std::vector<ProfileCount> profiles;
  std::map<std::string, std::size_t> profile_index;
  std::unordered_map<const std::string*, Counted> counted;
  // Ok rows whose video cannot be read back (or, with verify, does not hash to its row): the
  // newest per id, decided with the good rows after the scan (the merge's rule picks among all).
  struct Damaged {
    Counted order;
    std::string message;
  };
  std::map<std::string, Damaged> damaged;
  const auto newer_than = [](const Counted& a, const Counted& b) {
    return a.end_time != b.end_time ? a.end_time > b.end_time
           : a.attempt != b.attempt ? a.attempt > b.attempt
                                    : a.file_order > b.file_order;
  };
  std::size_t superseded = 0;  // ids done under two input keys: the newer row counts
  std::string superseded_example;
  auto& done = out.done;
  const auto files = list_rank_files(dir);
  const auto count_profile = [&](const std::string& profile, const std::filesystem::path& file) {
    auto [at, inserted] = profile_index.try_emplace(profile, profiles.size());
    if (inserted) profiles.push_back(ProfileCount{profile, 0, file});
    ProfileCount& p = profiles[at->second];
    if (p.requests++ == 0 || file < p.example_file) p.example_file = file;
    return at->second;
  };
  for (std::size_t i = 0; i < files.size(); ++i) {
    const auto& file = files[i];
    const auto add = [&](StoredRow&& row) {
      if (row.record.status != RequestStatus::ok) return;
      if (verify && row.video_expected && (row.video_present || !row.video_error.empty())) {
        ++out.verified;
      }
      if (row.video_expected && !row.video_present) {  // writer died or failed in between
        std::string message;
        if (verify && row.video_error.starts_with("the stored video does not match")) {
          message = "verify: " + file.string() + ": request '" + row.record.id +
                    "': " + row.video_error + "; it is generated again";
        } else if (!row.video_error.empty()) {
          message = "resume: " + file.string() + ": request '" + row.record.id +
                    "' is recorded ok but its video cannot be read back (" + row.video_error +
                    "); it is generated again";
        }
        const Counted order{row.record.end_time, row.record.attempt, i, 0};
        auto [at, inserted] = damaged.try_emplace(row.record.id, Damaged{order, message});
        if (!inserted && newer_than(order, at->second.order)) at->second = {order, message};
        return;
      }
      const Counted candidate{row.record.end_time, row.record.attempt, i, 0};
      auto [it, inserted] = done.try_emplace(row.record.id, row.record.input_key);
      if (inserted) {
        Counted c = candidate;
        c.profile = count_profile(row.record.numerics, file);
        counted.emplace(&it->first, c);
        return;
      }
      // The merge's rule (select_rows) among ok rows: the newest end_time, then the higher
      // attempt, then the later file; the first row read wins a tie.
      Counted& c = counted.at(&it->first);
      const bool newer = newer_than(candidate, c);
      const bool other_key = it->second != row.record.input_key;
      if (other_key && superseded++ == 0) superseded_example = row.record.id;
      if (!newer) return;
      if (other_key) it->second = row.record.input_key;
      --profiles[c.profile].requests;
      const std::size_t profile = count_profile(row.record.numerics, file);
      c = candidate;
      c.profile = profile;
    };
    // Rows of a file read before a failure are kept: what was flushed is done.
    try {
      for_each_stored_row(file, i, false, add, verify);
    } catch (const Error& e) {
      // Not HDF5, truncated, or not a regular file at all (a folder, a FIFO, a link loop named
      // like a rank file: issue 52, classes 3 and 13).
      if (e.kind() != ErrorKind::hdf5 && e.kind() != ErrorKind::io) throw;
      if (!is_locked_by_writer(file)) {
        log_warn("resume: skipping unreadable " + file.string() +
                 " (its requests are generated again): " + e.what());
        continue;
      }
      // A live process holds HDF5's lock: an earlier run still writing this folder, or its
      // rank still exiting after mpirun returned (that one lets go within seconds).
      log_info(fmt::format(
          "resume: {} is locked by another process; waiting up to {} s for it to let go",
          file.string(), static_cast<int>(lock_wait_s)));
      const auto until = std::chrono::steady_clock::now() +
                         std::chrono::duration<double>(std::max(0.0, lock_wait_s));
      while (is_locked_by_writer(file) && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (is_locked_by_writer(file)) throw InputError(file.string(), locked_file_message(file));
      for_each_stored_row(file, i, false, add, verify);
    }
  }
  // A damaged row counts where the merge would take it: when it is newer than every good row
  // of its id (an older good row then does not make the request done). One older than a good
  // row is superseded and says nothing.
  for (const auto& [id, bad] : damaged) {
    const auto it = done.find(id);
    if (it != done.end()) {
      Counted& c = counted.at(&it->first);
      if (!newer_than(bad.order, c)) continue;
      --profiles[c.profile].requests;
      counted.erase(&it->first);
      done.erase(it);
    }
    if (bad.message.starts_with("verify:")) ++out.verify_mismatches;
    if (!bad.message.empty()) log_warn(bad.message);
  }
  if (verify) {
    log_info("verify: re-hashed " + std::to_string(out.verified) + " stored video(s) in " +
             dir.string() + ": " + std::to_string(out.verify_mismatches) +
             " did not match their video_sha256" +
             (out.verify_mismatches > 0 ? " and are generated again" : ""));
  }
  if (superseded > 0) {
    log_info(fmt::format(
        "resume: {} request(s) are recorded done under two input keys (e.g. '{}', after "
        "--no-resume with a changed manifest): the newest row of each counts, as in the merge",
        superseded, superseded_example));
  }
  for (auto& p : profiles) {
    if (p.requests > 0) out.profiles.push_back(std::move(p));
  }
  std::stable_sort(
      out.profiles.begin(), out.profiles.end(), [](const ProfileCount& a, const ProfileCount& b) {
        return a.requests != b.requests ? a.requests > b.requests : a.profile < b.profile;
      });
  return out;
}

std::unordered_map<std::string, std::string> scan_done(const std::filesystem::path& dir,
                                                       double lock_wait_s) {
  return scan_folder(dir, lock_wait_s).done;
}

std::vector<std::string> check_resume_profiles(const ResumeScan& scan,
                                               const std::filesystem::path& dir,
                                               const std::string& current, bool allow_mixed) {
  std::vector<std::string> warnings;
  std::vector<const ProfileCount*> refused;
  for (const auto& p : scan.profiles) {
    NumericsDifference d = compare_numerics(p.profile, current);
    // A cache its manifest line set is pinned by the row's input key (a changed line's cache
    // is a changed request), whatever generation.cache is now.
    if (cache_from_line(p.profile)) std::erase(d.keys, std::string("cache"));
    // So are a line's LoRA adapters (lora_line).
    std::erase(d.keys, std::string("lora_line"));
    if (!d.any()) continue;
    const std::string count = fmt::format("{} request(s) done in {}", p.requests, dir.string());
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
                     : "numerics profile '" + p.profile +
                           "' (differing: " + describe_difference(p.profile, current) + ")") +
          "; they are kept and skipped, new rows record '" + current + "'");
      continue;
    }
    refused.push_back(&p);
  }
  if (refused.empty()) return warnings;
  const ProfileCount& p = *refused.front();
  std::string message = fmt::format("{} request(s) already done here (e.g. in {}) were made with ",
                                    p.requests, p.example_file.filename().string());
  if (p.profile.empty()) {
    message += "an unknown numerics profile (written before profiles were recorded)";
  } else {
    message += "numerics profile '" + p.profile + "'";
  }
  message += ", but this run's profile is '" + current + "'";
  if (!p.profile.empty())
    message += " (differing: " + describe_difference(p.profile, current) + ")";
  if (refused.size() > 1) {
    message += fmt::format("; {} more profile(s) differ too", refused.size() - 1);
  }
  message +=
      "; resuming would mix videos of two numerics profiles: use a new output.dir, --no-resume "
      "to generate them again, or --resume-mixed to keep them (each row records its profile)";
  throw Error(ErrorKind::config, message, {dir.string()});
}

}  // namespace omnidp::results
