#pragma once
// What a job is run with (job.hpp: run_job, print_plan; rank_setup.hpp: every rank's setup):
// the resolved configuration, the resume switches, and the hooks that build the model, the
// results sink, the resume scan and the merge (tests substitute their own). A plain value,
// read by every thread of a rank, never written once the job starts.

#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

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

}  // namespace omnidp::runtime
