#pragma once
// The rank-kill faults of the test-only `faults:` section (docs/reliability.md), as decorators
// of a rank's result sink: the writer and the HDF5 rank writer know nothing of them. A
// production configuration sets none of these (and its effective configuration does not print
// the section: config::to_yaml leaves out a section at its defaults).

#include <functional>
#include <memory>

#include "omnidp/config/config.hpp"
#include "omnidp/results/record.hpp"

namespace omnidp::runtime {

// `sink` itself, or, on rank faults.kill_rank with faults.kill_after > 0 and not
// faults.kill_in_write, a sink that kills the process (SIGKILL) right after its kill_after-th
// write returned (the row is durable; Done is never sent for it). A kill from outside, as it
// simulates: it notes a signal in the rank's attempt log first, so the request it cuts short is
// not counted against (results/attempt_log.hpp).
[[nodiscard]] std::unique_ptr<ResultSink> with_kill_after_writes(std::unique_ptr<ResultSink> sink,
                                                                 const FaultConfig& faults, int rank);

// For results::RankWriter::set_fault_hook: on rank faults.kill_rank with faults.kill_in_write
// and faults.kill_after > 0, a hook that kills the process inside its kill_after-th call
// (between the dataset write and the flush); otherwise empty.
[[nodiscard]] std::function<void()> kill_in_write_hook(const FaultConfig& faults, int rank);

}  // namespace omnidp::runtime
