#pragma once
// Entry point of a whole omni-dp-batch job on one rank. Called by every rank of the MPI world;
// run_job initialises MPI itself (runtime::MpiEnvironment, MPI_THREAD_FUNNELED) and finalizes
// it before returning. Rank 0 coordinates (docs/runtime.md).

#include <exception>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "omnidp/common/error.hpp"
#include "omnidp/config/config.hpp"
#include "omnidp/models/pipeline.hpp"
#include "omnidp/results/record.hpp"
#include "omnidp/runtime/deadline.hpp"

namespace omnidp::runtime {

// What a rank's results file records about its writer.
struct SinkInfo {
  int rank = 0;
  int world_size = 1;
  std::string host;
  std::string device;
  std::string model;
  std::string config_yaml;  // the effective configuration
};

// Builds the rank's ResultSink (called on its writer thread, once the model has loaded).
using SinkFactory = std::function<std::unique_ptr<ResultSink>(const SinkInfo&)>;
// id -> input_key of the requests already done in an output folder (resume).
using DoneScanner =
    std::function<std::unordered_map<std::string, std::string>(const std::filesystem::path&)>;
// Rank 0, after every rank closed its files: writes <dir>/results.h5 from the rank files.
using Merger = std::function<void(const std::filesystem::path& dir, const RunSummary& summary,
                                  const std::string& config_yaml)>;

struct JobOptions {
  Config config;       // validated and resolved
  bool resume = true;  // --resume / --no-resume
  // --resume-mixed: resume a folder whose done rows were made with another numerics profile
  // (results::check_resume_profiles; without it that is an error, exit 2).
  bool resume_mixed = false;
  // --verify: the resume scan re-hashes every stored video; one whose bytes do not match its
  // row's video_sha256 is not done, so this run generates it again (results::scan_folder).
  bool verify = false;
  // Attempts counted across runs (results/attempt_log.hpp; issue 39, class 6): each working
  // rank logs the start and the end of every attempt in output.dir, and rank 0 reads the logs
  // before handing out work (a request interrupted more than scheduler.max_retries times is
  // recorded failed without running). run_job and print_plan turn it on; tests of the actors
  // leave it off unless they test it.
  bool count_attempts = false;
  PipelineFactory make_pipeline;  // builds this rank's model (registry::create_pipeline)
  // Results hooks; empty = the HDF5 results (results_sink_factory, results::scan_folder with
  // results::check_resume_profiles against this config's profile, results::merge_directory).
  // omni-dp-batch wraps the sink with its exports (cli/batch.cpp); tests substitute their own.
  SinkFactory make_sink;
  DoneScanner scan_done;
  Merger merge;
  double progress_interval_s = 10.0;  // plain progress lines (not on a terminal)
  // The job's end (--deadline); empty: rank 0 asks lookup_deadline (empty hook: Slurm's end
  // time, slurm_deadline()). Deadline-aware dispatch: docs/slurm.md, "Deadline".
  std::optional<Deadline> deadline;
  std::function<std::optional<Deadline>()> lookup_deadline;
  // The job's clock in seconds since the epoch; empty: the system clocks (steady for
  // durations). Tests inject one: the coordinator's decisions, the measured request seconds,
  // the request timeout watch and the heartbeats then all read it.
  std::function<double()> clock;
  // Called on this rank with the error that stops run_job after MPI_Init, before MPI_Finalize
  // (omni-dp-batch prints it there: a rank that exits first cannot make the launcher stop this
  // one before it has printed); run_job then rethrows it.
  std::function<void(const std::exception&)> report_error;
};

// The HDF5 rank files of `config` (results::RankWriter in config.output.dir), with the
// test-only faults.kill_in_write armed (faults.hpp).
[[nodiscard]] SinkFactory results_sink_factory(const Config& config);

// Runs the job to its end on this rank and returns the process exit code (same on every rank:
// 0 all done, 1 some failed, 75 drained by a signal). Throws omnidp::Error for errors that
// stop the job before it starts (exit 2), the same on every rank. Rank 0 prints the effective
// configuration at start and the summary at the end (stdout), progress on stderr.
[[nodiscard]] ExitCode run_job(const JobOptions& options);

// For a rank of a job under a launcher that stopped on an error before calling run_job
// (omni-dp-batch: a bad --set, an unreadable config): initialises MPI and joins the first
// collective of the other ranks' run_job, which then returns exit 2 (no rank waits for one that
// will never come), and runs `report` on the lowest rank that stopped, before MPI_Finalize.
// Since MPI_Finalize waits for every rank, no rank exits (and no launcher stops the reporting
// rank) before the error is printed: exactly one rank prints it (issue 52, class 15).
void stop_before_job(const std::function<void()>& report);

// `omni-dp-batch --dry-run`: prints what a job of `world_size` ranks would do, without MPI and
// without loading a model: the requests (and how many resume would skip), the replicas and
// their groups, the devices, and the first requests in service order with their estimated
// cost. Reads the manifest (and the output folder when resuming). Throws like run_job's
// pre-start checks (ConfigError, ManifestError, ...).
void print_plan(const JobOptions& options, int world_size, std::ostream& out);

}  // namespace omnidp::runtime
