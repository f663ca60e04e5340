#pragma once
// What one rank of a job is given (rank.hpp: run_rank; actor.hpp: every actor's context): the
// job's options, its transports and collectives, where it sits in the topology, and its signal
// and progress hooks. Nothing is owned: the pointers outlive the rank's run.

#include <cstdio>
#include <functional>
#include <string>

#include "omnidp/runtime/collective.hpp"
#include "omnidp/runtime/job_options.hpp"
#include "omnidp/runtime/topology.hpp"
#include "omnidp/runtime/transport.hpp"

namespace omnidp::runtime {

struct RankSetup {
  const JobOptions* options = nullptr;
  Transport* world = nullptr;
  Transport* group = nullptr;  // the replica's group (ranks 0..G-1 = the group), or null if G = 1
  GroupAxes axes;  // the group's collectives per axis (worker thread); all null if G = 1
  Topology topology;
  int local_rank = 0;  // index on this node (device binding)
  std::string host;
  std::function<int()> signal_level;  // drain signals received by this rank so far; may be empty
  std::function<int()> last_signal;   // the last one's number (for logs); may be empty
  std::FILE* progress_out = nullptr;  // rank 0's progress output
  bool progress_in_place = false;
};

}  // namespace omnidp::runtime
