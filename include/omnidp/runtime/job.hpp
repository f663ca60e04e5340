#pragma once
// Entry point of a whole omni-dp-batch job on one rank. Called by every rank of the MPI world
// (after MPI_Init_thread through runtime::MpiEnvironment); rank 0 coordinates.

#include <memory>
#include <string>

#include "omnidp/common/error.hpp"
#include "omnidp/config/config.hpp"
#include "omnidp/models/pipeline.hpp"

namespace omnidp::runtime {

struct JobOptions {
  Config config;               // validated and resolved
  bool resume = true;          // --resume / --no-resume
  PipelineFactory make_pipeline;  // builds this rank's model (registry::create_pipeline)
};

// Runs the job to its end on this rank and returns the process exit code (same on every rank:
// 0 all done, 1 some failed, 75 drained by a signal). Throws omnidp::Error for errors that
// stop the job before it starts (exit 2).
[[nodiscard]] ExitCode run_job(const JobOptions& options);

}  // namespace omnidp::runtime
