#pragma once
// RunSummary <-> <dir>/summary.json (keys = the RunSummary field names), and the figures that
// can be recomputed from result rows alone. HDF5-free; plain functions, thread-safe.

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "omnidp/config/peak_flops.hpp"
#include "omnidp/results/record.hpp"

namespace omnidp::results {

[[nodiscard]] std::string summary_to_json(const RunSummary& summary);  // pretty, one object
// Throws IoError naming `origin` on malformed JSON, a field of the wrong type (a negative or
// fractional count, a string for a number, ...) or figures outside their domain
// (summary_problem); missing fields keep their defaults.
[[nodiscard]] RunSummary summary_from_json(const std::string& text, const std::string& origin);
// "" when every figure of `s` is in its domain, else the first that is not: a negative, NaN or
// infinite number, a size below 1, total < completed + failed, replicas > world_size, busy
// figures for more ranks than world_size, flops_counted > completed, forwards_computed >
// forwards, peak_tflops 0, cache_skip_rate > 1 (issue 52, class 14).
[[nodiscard]] std::string summary_problem(const RunSummary& s);
// Writes atomically (temporary file + rename). Throws IoError.
void write_summary_json(const std::filesystem::path& path, const RunSummary& summary);
// Reads a regular file only (a FIFO or a device is an IoError, never opened for reading).
[[nodiscard]] RunSummary read_summary_json(const std::filesystem::path& path);

// How a run's ranks worked (docs/runtime.md, "Replica groups and devices"): the working ranks are
// 0..world_size-1, or 1..world_size-1 when the coordinator does no work, in consecutive groups
// of tensor x sequence x cfg ranks whose first rank (the leader) writes the group's rows.
struct RankLayout {
  int world_size = 1;
  int tensor_parallel = 1;
  int sequence_parallel = 1;
  int cfg_parallel = 1;
  bool coordinator_works = true;
  // runtime.peak_tflops of the run (nullopt: the device table by each row's device).
  RuntimeConfig runtime;

  [[nodiscard]] int group_size() const noexcept {
    return tensor_parallel * sequence_parallel * cfg_parallel;
  }
  [[nodiscard]] int working_ranks() const noexcept {
    return coordinator_works ? world_size : world_size - 1;
  }
};
// The layout of a run from its effective configuration (a results file's config_yaml) and
// world size; a configuration that does not parse gives the plain layout of world_size ranks.
[[nodiscard]] RankLayout rank_layout(const std::string& config_yaml, int world_size);

// From rows only: total/completed/failed, makespan (first start to last end), videos per
// minute, latency p50/p90/max of ok rows (linear interpolation between order statistics),
// busy seconds per rank, busy fraction, scheduling efficiency over the working ranks. A row's
// seconds count for its rank (the group's leader) and for every member of its group, since a
// group computes each request together; replicas = working ranks / group size. The world size
// grows to cover every rank named in a row. Scheduler settings are left empty. The MFU fields
// come from the ok rows with model_tflop > 0 (set_flops_figures), each row's peak from
// resolve_peak(layout.runtime, row.device); the step cache's from the ok rows with forwards > 0
// (set_forwards_figures).
[[nodiscard]] RunSummary recompute_summary(std::span<const ResultRecord> rows,
                                           const RankLayout& layout);

// Whether `s` (the figures of one run segment: the runtime's, or summary.json) are the figures
// of the rows a folder holds now, `ok` ok and `failed` failed, one per id (docs/results.md,
// "Figures"): the segment resumed nothing (skipped_resume = 0) and counted exactly those rows.
// Not so after a rerun that skipped done requests (its figures cover only what it ran), an
// interrupted resume (summary.json is the earlier run's), or --no-resume over older rows.
[[nodiscard]] bool figures_cover_rows(const RunSummary& s, std::size_t ok, std::size_t failed);

// Whether `summary_json` was written after every file of `rank_files` last changed (mtimes;
// false when it is missing or a file is newer): otherwise it describes an earlier run.
[[nodiscard]] bool summary_json_current(const std::filesystem::path& summary_json,
                                        const std::vector<std::filesystem::path>& rank_files);

// The figures of `summary_json` when they are the figures of the rows of `rank_files` (`ok`
// ok and `failed` failed rows, one per id), as the readers of a folder take them (merge,
// inspect, export; docs/results.md, "Figures"): it is current (summary_json_current), reads as
// a summary (summary_from_json) and covers the rows (figures_cover_rows). Else nullopt and the
// figures are to be recomputed from the rows; where the file is there but cannot be used (not
// a regular file, a link loop, unreadable, malformed, a figure outside its domain) with one
// warning "<who>: <summary_json>: <why>; the figures are recomputed from the rows". Never
// throws for what the file holds (issue 52, class 14).
[[nodiscard]] std::optional<RunSummary> usable_summary_json(
    const std::filesystem::path& summary_json, const std::vector<std::filesystem::path>& rank_files,
    std::size_t ok, std::size_t failed, const std::string& who);

// One ok request's share of the MFU figures (docs/performance.md, "MFU").
struct FlopsSample {
  double tflop = 0.0;    // its model TFLOP (> 0)
  double seconds = 0.0;  // its wall time
  int gpus = 1;          // the GPUs of its replica group: the seconds count this many times
  std::optional<PeakFlops> peak;  // the peak of its GPUs; nullopt: unknown
};
// Sets the MFU fields of `s` (flops_counted, model_tflop_per_video, achieved_tflops_per_gpu,
// peak_tflops, peak_source, mfu, makespan_mfu) from the samples, s.makespan_s and the working
// GPUs: achieved = sum tflop / sum(seconds x gpus); the peak is the GPU-seconds weighted mean of
// the samples' peaks (one peak for a homogeneous run) and its source the distinct sources joined
// by ", "; a sample without a peak leaves peak, mfu and makespan_mfu nullopt; makespan_mfu =
// sum tflop / (makespan x working GPUs x peak).
void set_flops_figures(RunSummary& s, std::span<const FlopsSample> samples, int working_gpus);

// The MFU figures in one line (omni-dp-inspect, the run's summary): "2.250 TFLOP/video (18
// counted), 150.000 TFLOP/s per GPU, MFU 15.16% of 989.4 TFLOP/s (device table (NVIDIA
// H200)), makespan MFU 12.00%"; "MFU n/a (...)" without a peak; "not counted" without samples.
[[nodiscard]] std::string describe_flops(const RunSummary& s);

// The transformer forwards of the ok requests that recorded them (docs/results.md, "Figures").
struct ForwardTotals {
  std::size_t forwards = 0;
  std::size_t computed = 0;
  // Adds one ok request's counts (computed taken within 0..forwards); a request with
  // forwards <= 0 (not recorded) adds nothing.
  void add(int forwards, int computed) noexcept;
};
// Sets forwards, forwards_computed and cache_skip_rate of `s`: the sums, and 1 - computed /
// forwards (nullopt when no request recorded its forwards).
void set_forwards_figures(RunSummary& s, const ForwardTotals& totals);
// Whether a step cache skipped a forward in the requests of `s` (forwards_computed < forwards):
// the job's summary prints its step cache line only then.
[[nodiscard]] bool forwards_skipped(const RunSummary& s) noexcept;
// The step cache figures in one line (omni-dp-inspect, the HTML report, the run's summary):
// "skip rate 33.33% (40 of 120 transformer forwards skipped, 80 computed)"; "not recorded (no
// ok request with a forward count)" when none recorded them.
[[nodiscard]] std::string describe_forwards(const RunSummary& s);

// Linear-interpolation percentile (q in [0,1]) of unsorted values; 0 for an empty input.
[[nodiscard]] double percentile(std::span<const double> values, double q);

}  // namespace omnidp::results
