#pragma once
// One rank of a job, over any Transport (docs/runtime.md, "Actors"). The calling thread becomes
// the rank's comm thread: the only one that touches the transports. It starts
//  - the coordinator thread (rank 0): pre-start pass over the manifest, then the Coordinator;
//  - the worker thread (replica leaders): loads the Pipeline after Start, runs one request at
//    a time from its mailbox (the running one plus `prefetch` queued);
//  - the writer thread (replica leaders): opens the ResultSink after the model loaded, hashes
//    each finished video (video_sha256, off the model's critical path), writes the request,
//    and only then has Done sent to the coordinator.
//  - group members (cfg, sequence or tensor parallel) load the Pipeline too and run each request the leader
//    starts (GroupRun) with it, through the group's Collective; they write nothing and report
//    their own busy seconds in Closed.
// run_job (job.hpp) wires this to MPI; run_job_in_process runs N simulated ranks as threads.

#include <atomic>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "omnidp/runtime/collective.hpp"
#include "omnidp/runtime/job_options.hpp"
#include "omnidp/runtime/rank_setup.hpp"
#include "omnidp/runtime/topology.hpp"
#include "omnidp/runtime/transport.hpp"

namespace omnidp::runtime {

// Runs the rank to the end of the job and returns the job's exit code (the same on every rank).
// Throws the job's Error when it could not start or ended on a job-level failure (every rank
// throws the same kind). A local failure that breaks the protocol aborts the whole job through
// Transport::abort_job.
[[nodiscard]] ExitCode run_rank(const RankSetup& setup);

// The outcome of one simulated rank.
struct RankOutcome {
  ExitCode code = ExitCode::ok;
  bool threw = false;
  ErrorKind kind = ErrorKind::runtime;
  std::string error;  // what()
};

// Runs a whole job as `world_size` simulated ranks (threads) over InProcessNetworks, without
// MPI; for tests. `signal_levels` (optional, one per rank) are read as each rank's drain-signal
// counters, so a test can "signal" a rank.
[[nodiscard]] std::vector<RankOutcome> run_job_in_process(
    const JobOptions& options, int world_size,
    const std::vector<const std::atomic<int>*>& signal_levels = {});

}  // namespace omnidp::runtime
