#include "omnidp/results/compare.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "omnidp/common/error.hpp"
#include "omnidp/config/numerics.hpp"
#include "omnidp/results/hdf5.hpp"
#include "omnidp/results/result_files.hpp"
#include "omnidp/results/table.hpp"

namespace omnidp::results {
namespace {

// The hash that counts for an entry: the bytes' hash when checked, else the stored one.
const std::string& effective_sha(const ResultEntry& e) {
  return e.actual_sha256.empty() ? e.video_sha256 : e.actual_sha256;
}

bool corrupt(const ResultEntry& e) {
  return !e.actual_sha256.empty() && e.actual_sha256 != e.video_sha256;
}

template <class T>
std::vector<T> first_n(const std::vector<T>& items, std::size_t n) {
  return std::vector<T>(items.begin(),
                        items.begin() + static_cast<std::ptrdiff_t>(std::min(n, items.size())));
}

void list_section(std::ostringstream& out, const char* title, const std::vector<std::string>& ids,
                  std::size_t max_list) {
  if (ids.empty() || max_list == 0) return;
  out << title << " (" << std::min(max_list, ids.size()) << " of " << ids.size() << "):\n";
  for (const auto& id : first_n(ids, max_list)) out << "  " << id << "\n";
}

// The profiles without their software version (what the bytes depend on); "" stays "".
std::set<std::string> numerics_set(const std::map<std::string, std::size_t>& profiles) {
  std::set<std::string> out;
  for (const auto& [profile, n] : profiles) {
    auto items = parse_numerics(profile);
    items.erase(std::string(kSoftwareKey));
    std::string key;
    for (const auto& [k, v] : items) key += k + "=" + v + ";";
    out.insert(key);
  }
  return out;
}

std::string shape_of(const StoredFrames& v) {
  return fmt::format("{}x{}x{}", v.frames(), v.height(), v.width());
}

std::string format_db(double db) {
  if (std::isinf(db)) return "inf";
  return fmt::format("{:.2f}", db);
}

std::string describe_bounds(const Tolerance& t) {
  std::string out;
  if (t.max_level_diff) out += fmt::format("max level diff <= {}", *t.max_level_diff);
  if (t.min_psnr_db)
    out += (out.empty() ? "" : ", ") + ("PSNR >= " + format_db(*t.min_psnr_db) + " dB");
  return out;
}

// The request of B each request of A is joined with (nullptr: none), one to one: within one
// input key, a request of B with the same id first, then the others in id order (B's ok ones
// first). Two ids of one side that share an input key each need a partner of their own, so an
// id present on one side only is missing however many requests of the other side share its key
// (issue 52, class 2).
std::vector<const ResultEntry*> pair_by_input_key(const ResultSet& a, const ResultSet& b) {
  std::unordered_map<std::string, std::vector<const ResultEntry*>> b_by_key;
  for (const auto& e : b.entries) b_by_key[e.input_key].push_back(&e);  // in id order
  std::unordered_map<std::string, std::vector<std::size_t>> a_by_key;
  for (std::size_t i = 0; i < a.entries.size(); ++i) a_by_key[a.entries[i].input_key].push_back(i);
  std::vector<const ResultEntry*> partner(a.entries.size(), nullptr);
  for (const auto& [key, in_a] : a_by_key) {
    const auto found = b_by_key.find(key);
    if (found == b_by_key.end()) continue;
    const std::vector<const ResultEntry*>& in_b = found->second;
    std::unordered_map<std::string_view, std::size_t> b_by_id;
    for (std::size_t j = 0; j < in_b.size(); ++j) b_by_id.emplace(in_b[j]->id, j);
    std::vector<bool> taken(in_b.size(), false);
    std::vector<std::size_t> unpaired;  // of A, in id order
    for (const std::size_t i : in_a) {
      const auto same = b_by_id.find(a.entries[i].id);
      if (same != b_by_id.end()) {
        partner[i] = in_b[same->second];
        taken[same->second] = true;
      } else {
        unpaired.push_back(i);
      }
    }
    std::vector<std::size_t> free;  // of B
    for (std::size_t j = 0; j < in_b.size(); ++j) {
      if (!taken[j]) free.push_back(j);
    }
    std::stable_partition(free.begin(), free.end(),
                          [&in_b](std::size_t j) { return in_b[j]->status == RequestStatus::ok; });
    for (std::size_t k = 0; k < unpaired.size() && k < free.size(); ++k) {
      partner[unpaired[k]] = in_b[free[k]];
    }
  }
  return partner;
}

}  // namespace

LevelDifference compare_stored_videos(const ResultEntry& a, const ResultEntry& b,
                                      const Tolerance& tolerance) {
  LevelDifference d;
  d.id_a = a.id;
  d.id_b = b.id;
  if (!a.video_present || !b.video_present) {
    d.error = std::string("no stored video in ") + (!a.video_present ? "A" : "B");
    return d;
  }
  const h5::File file_a = h5::open_file(a.file);
  const h5::File file_b = h5::open_file(b.file);
  const StoredFrames va(file_a.id(), a.id);
  const StoredFrames vb(file_b.id(), b.id);
  if (va.frames() != vb.frames() || va.height() != vb.height() || va.width() != vb.width()) {
    d.error = "shapes differ (frames x height x width): A " + shape_of(va) + ", B " + shape_of(vb);
    return d;
  }
  std::vector<std::uint8_t> fa;
  std::vector<std::uint8_t> fb;
  std::uint64_t squared = 0;
  int largest = 0;
  for (int f = 0; f < va.frames(); ++f) {
    va.read(f, fa);
    vb.read(f, fb);
    for (std::size_t i = 0; i < fa.size(); ++i) {
      const int diff = std::abs(static_cast<int>(fa[i]) - static_cast<int>(fb[i]));
      largest = std::max(largest, diff);
      squared += static_cast<std::uint64_t>(diff * diff);
    }
  }
  const double values = static_cast<double>(va.frames()) * static_cast<double>(va.frame_bytes());
  d.max_level_diff = largest;
  d.psnr_db = squared == 0
                  ? std::numeric_limits<double>::infinity()
                  : 10.0 * std::log10(255.0 * 255.0 * values / static_cast<double>(squared));
  d.within = (!tolerance.max_level_diff || largest <= *tolerance.max_level_diff) &&
             (!tolerance.min_psnr_db || d.psnr_db >= *tolerance.min_psnr_db);
  return d;
}

std::string describe(const LevelDifference& d) {
  if (!d.error.empty()) return d.error;
  return fmt::format("max level diff {}, PSNR {} dB", d.max_level_diff, format_db(d.psnr_db));
}

ResultSet read_results(const std::filesystem::path& path, const ReadOptions& options) {
  ResultSet set;
  set.source = path.string();
  const std::vector<std::filesystem::path> files = result_paths(path).files;
  FilesRows read = read_rows_skipping_unreadable(files, "compare");
  for (const auto& file : read.read) set.files.push_back(file.string());
  for (const auto& file : read.unreadable) set.unreadable_files.push_back(file.string());
  for (const auto& file : read.live) set.live_files.push_back(file.string());
  std::vector<std::pair<std::string, std::string>> broken;  // id, "<id> (<file>): <why>"
  for (const auto& row : read.rows) {
    if (row.video_error.empty()) continue;
    broken.emplace_back(row.record.id,
                        row.record.id + " (" + row.file.string() + "): " + row.video_error);
  }
  const auto selected = select_rows(std::move(read.rows));
  {
    std::unordered_set<std::string> ok_ids;
    for (const auto& row : selected) {
      if (row.record.status == RequestStatus::ok) ok_ids.insert(row.record.id);
    }
    for (auto& [id, what] : broken) {
      if (!ok_ids.contains(id)) set.unreadable_videos.push_back(std::move(what));
    }
  }

  std::map<std::filesystem::path, h5::File> open_files;
  set.entries.reserve(selected.size());
  for (const auto& row : selected) {
    ResultEntry e;
    e.id = row.record.id;
    e.input_key = row.record.input_key;
    e.video_sha256 = row.record.video_sha256;
    e.status = row.record.status;
    e.error = row.record.error;
    e.video_present = row.video_present;
    e.numerics = row.record.numerics;
    e.file = row.file.string();
    if (options.verify_videos && row.video_present && e.status == RequestStatus::ok) {
      try {
        auto it = open_files.find(row.file);
        if (it == open_files.end()) {
          it = open_files.emplace(row.file, h5::open_file(row.file.string())).first;
        }
        e.actual_sha256 = hash_stored_video(it->second.id(), e.id);
      } catch (const Error& err) {  // reported by compare_results; the others go on
        e.video_error = video_read_error(row.file, err.what());
      }
    }
    set.entries.push_back(std::move(e));
  }
  return set;
}

bool CompareReport::passed(bool allow_missing) const noexcept {
  const std::size_t excused = allow_missing ? only_in_a : 0;
  return mismatched == 0 && mismatched_numerics == 0 && failed_a == 0 && failed_b == 0 &&
         unreadable_videos.empty() && matched + within_tolerance + excused == requests_a &&
         (allow_missing || only_in_b == 0);
}

bool CompareReport::profiles_differ() const {
  return numerics_set(profiles_a) != numerics_set(profiles_b);
}

CompareReport compare_results(const ResultSet& a, const ResultSet& b, const Tolerance& tolerance) {
  CompareReport r;
  r.tolerance = tolerance;
  r.source_a = a.source;
  r.source_b = b.source;
  r.requests_a = a.entries.size();
  r.requests_b = b.entries.size();
  r.unreadable_files_a = a.unreadable_files;
  r.unreadable_files_b = b.unreadable_files;
  r.live_files_a = a.live_files;
  r.live_files_b = b.live_files;
  for (const auto& what : a.unreadable_videos) r.unreadable_videos.push_back("A:" + what);
  for (const auto& what : b.unreadable_videos) r.unreadable_videos.push_back("B:" + what);

  const std::vector<const ResultEntry*> partner = pair_by_input_key(a, b);
  std::unordered_set<const ResultEntry*> b_paired;
  for (const ResultEntry* eb : partner) {
    if (eb != nullptr) b_paired.insert(eb);
  }

  for (const auto& e : a.entries) ++r.profiles_a[e.numerics];
  for (const auto& e : b.entries) ++r.profiles_b[e.numerics];
  for (std::size_t i = 0; i < a.entries.size(); ++i) {
    const ResultEntry& ea = a.entries[i];
    if (ea.status == RequestStatus::failed) {
      ++r.failed_a;
      r.failed_ids.push_back("A:" + ea.id);
      continue;
    }
    if (!ea.video_error.empty()) {
      r.unreadable_videos.push_back("A:" + ea.id + " (" + ea.file + "): " + ea.video_error);
      continue;
    }
    const ResultEntry* eb = partner[i];
    if (eb == nullptr) {
      ++r.only_in_a;
      r.only_in_a_ids.push_back(ea.id);
      continue;
    }
    if (eb->status == RequestStatus::failed) {
      ++r.failed_b;
      r.failed_ids.push_back("B:" + eb->id);
      continue;
    }
    if (!eb->video_error.empty()) {
      r.unreadable_videos.push_back("B:" + eb->id + " (" + eb->file + "): " + eb->video_error);
      continue;
    }
    std::string reason;
    bool numerics_differ = false;
    if (corrupt(ea)) {
      reason = "A's stored video does not match its recorded video_sha256 " + ea.video_sha256;
    } else if (corrupt(*eb)) {
      reason = "B's stored video does not match its recorded video_sha256 " + eb->video_sha256;
    } else if (effective_sha(ea) != effective_sha(*eb)) {
      reason = "video_sha256 differs";
      const NumericsDifference d = compare_numerics(ea.numerics, eb->numerics);
      if (d.numerics() && !d.unknown) {
        numerics_differ = true;
        reason += "; numerics profile differs: " + describe_difference(ea.numerics, eb->numerics);
      }
    }
    if (reason.empty()) {
      ++r.matched;
      continue;
    }
    if (tolerance.enabled() && !corrupt(ea) && !corrupt(*eb)) {
      LevelDifference d = compare_stored_videos(ea, *eb, tolerance);
      const bool within = d.within;
      reason += "; outside the tolerance: " + describe(d);
      r.level_differences.push_back(std::move(d));
      if (within) {
        ++r.within_tolerance;
        continue;
      }
    }
    ++(numerics_differ ? r.mismatched_numerics : r.mismatched);
    r.mismatches.push_back(Mismatch{ea.id, eb->id, ea.input_key, effective_sha(ea),
                                    effective_sha(*eb), reason, numerics_differ});
  }
  for (const auto& eb : b.entries) {
    if (!b_paired.contains(&eb)) {
      ++r.only_in_b;
      r.only_in_b_ids.push_back(eb.id);
    }
  }
  std::sort(r.only_in_b_ids.begin(), r.only_in_b_ids.end());
  std::sort(r.failed_ids.begin(), r.failed_ids.end());
  std::sort(r.unreadable_videos.begin(), r.unreadable_videos.end());
  return r;
}

std::string format_report(const CompareReport& r, std::size_t max_list, bool allow_missing) {
  std::ostringstream out;
  out << "A: " << r.source_a << " (" << r.requests_a << " requests)\n";
  out << "B: " << r.source_b << " (" << r.requests_b << " requests)\n";
  out << "matched:     " << r.matched << "\n";
  if (r.tolerance.enabled()) {
    out << "within tolerance (" << describe_bounds(r.tolerance) << "): " << r.within_tolerance
        << "\n";
  }
  out << "mismatched:  " << r.mismatched << "\n";
  const bool profiles_differ = r.profiles_differ();
  if (profiles_differ || r.mismatched_numerics > 0) {
    out << "mismatched (different numerics profile): " << r.mismatched_numerics << "\n";
  }
  out << "only in A:   " << r.only_in_a << (allow_missing ? " (allowed)" : "") << "\n";
  out << "only in B:   " << r.only_in_b << (allow_missing ? " (allowed)" : "") << "\n";
  out << "failed:      " << r.failed_a + r.failed_b << " (A: " << r.failed_a
      << ", B: " << r.failed_b << ")\n";
  if (!r.unreadable_videos.empty()) out << "unreadable:  " << r.unreadable_videos.size() << "\n";
  for (const auto& [side, files] :
       {std::pair{"A", &r.unreadable_files_a}, std::pair{"B", &r.unreadable_files_b}}) {
    for (const auto& file : *files) {
      out << "skipped unreadable file of " << side << ": " << file
          << " (its rows are not compared)\n";
    }
  }
  for (const auto& [side, files] :
       {std::pair{"A", &r.live_files_a}, std::pair{"B", &r.live_files_b}}) {
    for (const auto& file : *files) {
      out << "live file of " << side << ": " << file
          << " (a running job writes it: its rows so far are compared by hash)\n";
    }
  }
  if (!r.level_differences.empty() && max_list > 0) {
    out << "level differences (" << std::min(max_list, r.level_differences.size()) << " of "
        << r.level_differences.size() << "):\n";
    for (const auto& d : first_n(r.level_differences, max_list)) {
      out << "  " << d.id_a;
      if (d.id_b != d.id_a) out << " (B: " << d.id_b << ")";
      out << ": " << describe(d) << (d.within ? ": within" : ": outside") << "\n";
    }
  }
  if (!r.mismatches.empty() && max_list > 0) {
    out << "mismatches (" << std::min(max_list, r.mismatches.size()) << " of "
        << r.mismatches.size() << "):\n";
    for (const auto& m : first_n(r.mismatches, max_list)) {
      out << "  " << m.id_a;
      if (m.id_b != m.id_a) out << " (B: " << m.id_b << ")";
      out << ": A " << m.sha_a << " B " << m.sha_b << " (" << m.reason << ")\n";
    }
  }
  list_section(out, "only in A", r.only_in_a_ids, max_list);
  list_section(out, "only in B", r.only_in_b_ids, max_list);
  list_section(out, "failed", r.failed_ids, max_list);
  list_section(out, "unreadable videos", r.unreadable_videos, max_list);
  if (profiles_differ) {
    out << "numerics profiles differ:\n";
    for (const auto& [side, profiles] :
         {std::pair{"A", &r.profiles_a}, std::pair{"B", &r.profiles_b}}) {
      for (const auto& [profile, n] : *profiles) {
        out << "  " << side << ": "
            << (profile.empty() ? "unknown (written before profiles were recorded)" : profile)
            << " (" << n << " request" << (n == 1 ? "" : "s") << ")\n";
      }
    }
  }
  if (r.passed(allow_missing) && r.tolerance.enabled()) {
    out << "PASS: every request of A is matched in B: " << r.matched << " with an equal hash, "
        << r.within_tolerance << " within the tolerance\n";
  } else if (r.passed(allow_missing)) {
    out << "PASS: every request of A is matched with an equal hash in B\n";
  } else {
    out << "FAIL: " << r.mismatched << " mismatched";
    if (r.mismatched_numerics > 0) {
      out << " (+" << r.mismatched_numerics << " under a different numerics profile)";
    }
    out << ", " << r.only_in_a << " only in A, ";
    if (r.only_in_b > 0 && !allow_missing) out << r.only_in_b << " only in B, ";
    out << r.failed_a + r.failed_b << " failed";
    if (!r.unreadable_videos.empty()) out << ", " << r.unreadable_videos.size() << " unreadable";
    out << "\n";
  }
  return out.str();
}

std::string report_to_json(const CompareReport& r, std::size_t max_list, bool allow_missing) {
  using nlohmann::json;
  json mismatches = json::array();
  for (const auto& m : first_n(r.mismatches, max_list)) {
    mismatches.push_back({{"id_a", m.id_a},
                          {"id_b", m.id_b},
                          {"input_key", m.input_key},
                          {"sha_a", m.sha_a},
                          {"sha_b", m.sha_b},
                          {"reason", m.reason},
                          {"numerics_differ", m.numerics_differ}});
  }
  json differences = json::array();
  for (const auto& d : first_n(r.level_differences, max_list)) {
    json item = {{"id_a", d.id_a}, {"id_b", d.id_b}, {"within", d.within}};
    if (d.error.empty()) {
      item["max_level_diff"] = d.max_level_diff;
      item["psnr_db"] = std::isinf(d.psnr_db) ? json(nullptr) : json(d.psnr_db);
    } else {
      item["error"] = d.error;
    }
    differences.push_back(std::move(item));
  }
  json tolerance = json::object();
  if (r.tolerance.max_level_diff) tolerance["max_level_diff"] = *r.tolerance.max_level_diff;
  if (r.tolerance.min_psnr_db) tolerance["min_psnr_db"] = *r.tolerance.min_psnr_db;
  const json j = {
      {"tolerance", tolerance},
      {"within_tolerance", r.within_tolerance},
      {"level_differences", differences},
      {"a", {{"source", r.source_a}, {"requests", r.requests_a}}},
      {"b", {{"source", r.source_b}, {"requests", r.requests_b}}},
      {"matched", r.matched},
      {"mismatched", r.mismatched},
      {"mismatched_numerics", r.mismatched_numerics},
      {"profiles", {{"a", r.profiles_a}, {"b", r.profiles_b}, {"differ", r.profiles_differ()}}},
      {"only_in_a", r.only_in_a},
      {"only_in_b", r.only_in_b},
      {"failed", {{"a", r.failed_a}, {"b", r.failed_b}}},
      {"mismatches", mismatches},
      {"only_in_a_ids", first_n(r.only_in_a_ids, max_list)},
      {"only_in_b_ids", first_n(r.only_in_b_ids, max_list)},
      {"failed_ids", first_n(r.failed_ids, max_list)},
      {"unreadable", r.unreadable_videos.size()},
      {"unreadable_videos", first_n(r.unreadable_videos, max_list)},
      {"unreadable_files", {{"a", r.unreadable_files_a}, {"b", r.unreadable_files_b}}},
      {"live_files", {{"a", r.live_files_a}, {"b", r.live_files_b}}},
      {"max_list", max_list},
      {"allow_missing", allow_missing},
      {"passed", r.passed(allow_missing)},
  };
  return j.dump(2) + "\n";
}

}  // namespace omnidp::results
