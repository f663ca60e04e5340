#pragma once
// The job's end time, for deadline-aware dispatch (docs/slurm.md, "Deadline"): from
// `omni-dp-batch --deadline TIME`, else from Slurm (SLURM_JOB_END_TIME, else squeue). Rank 0
// decides; the coordinator then hands out only requests the cost model expects to finish
// before the deadline minus scheduler.deadline_margin_s, and drains (exit 75) when none fits.
// This does not depend on a launcher forwarding signals. Plain functions, thread-safe.

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace omnidp::runtime {

struct Deadline {
  double unix_s = 0.0;  // seconds since the Unix epoch
  std::string source;   // where it came from, for the log: "--deadline +20s", "SLURM_JOB_END_TIME"
};

// Parses a --deadline value; `now_unix` anchors the relative form. Accepted:
//   2026-12-01T12:00:00      local time ('T' or one space; seconds optional)
//   2026-12-01T12:00:00Z     UTC; or with an offset: +01:00, -0500
//   @1764590400              Unix epoch seconds
//   +20s  +15m  +2h  +90     relative to now (seconds when no unit)
// Anything else throws UsageError naming the value and the accepted forms (exit 2).
[[nodiscard]] double parse_deadline(std::string_view text, double now_unix);

// How the Slurm lookup reads its environment and runs squeue (tests inject both).
struct SlurmProbe {
  std::function<std::optional<std::string>(const char* name)> getenv;  // empty: ::getenv
  // Runs a shell command; its stdout, or nullopt when it could not run or exited non-zero.
  // Empty: popen.
  std::function<std::optional<std::string>(const std::string& command)> run;
  // Whether `squeue` is on PATH. Empty: searches PATH.
  std::function<bool()> has_squeue;
};

// The job's end from Slurm: SLURM_JOB_END_TIME (epoch seconds) where set, else
// `squeue -h -j $SLURM_JOB_ID -o %e` (local time) when SLURM_JOB_ID is set and squeue exists.
// nullopt: no deadline (not under Slurm, no time limit); a failure of squeue or a value that
// does not parse is a warning (logged) and means no deadline.
[[nodiscard]] std::optional<Deadline> slurm_deadline(const SlurmProbe& probe = {});

// "2026-12-01T12:00:00Z" (UTC, whole seconds).
[[nodiscard]] std::string format_utc(double unix_s);

}  // namespace omnidp::runtime
