#pragma once
// Drain signals (docs/runtime.md, "Signals and drain"): SIGUSR1, SIGTERM and SIGINT only count (an
// async-signal-safe, lock-free atomic increment); the rank's comm thread reads the count and tells
// the coordinator: 1 = drain, 2 = abandon running requests too.

namespace omnidp::runtime {

// The same counting handlers, installed at once with the signals unblocked, for a process's
// first moments (issue 52, class 7: a USR1 that mpirun forwarded while libtorch's libraries
// initialized, seconds before main, killed the rank with the default disposition). omni-dp-batch
// calls it from its .preinit_array, which runs before any shared library's initializers; the
// next DrainSignals keeps what it counted (the job drains at once). Async-signal-safe calls only.
void install_early_drain_handlers() noexcept;

// For a run that starts no job (--version, --validate-only, --dry-run, --merge-only, usage
// errors): restores the default dispositions, then re-raises a drain signal counted so far, so
// that such a command ends on it as it would have without the early handlers.
void release_early_drain_handlers() noexcept;

// Installs the handlers for SIGUSR1, SIGTERM and SIGINT and unblocks them in the calling thread (a
// launcher may pass them blocked); restores the previous handlers and mask when destroyed.
// One at a time per process (the count is process-wide; it is reset on construction, except
// the first after install_early_drain_handlers, which keeps the signals counted before it).
// Construct it on the main thread before starting other threads: they inherit its mask.
class DrainSignals {
 public:
  DrainSignals();
  ~DrainSignals();
  DrainSignals(const DrainSignals&) = delete;
  DrainSignals& operator=(const DrainSignals&) = delete;

  // How many drain signals arrived since construction, and the last one's number.
  [[nodiscard]] static int count() noexcept;
  [[nodiscard]] static int last() noexcept;
};

}  // namespace omnidp::runtime
