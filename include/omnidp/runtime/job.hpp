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
#include "omnidp/runtime/job_options.hpp"

namespace omnidp::runtime {

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
