#pragma once
// Drain signals (docs/runtime.md, "Signals and drain"): SIGUSR1, SIGTERM and SIGINT only count (an
// async-signal-safe, lock-free atomic increment); the rank's comm thread reads the count and tells
// the coordinator: 1 = drain, 2 = abandon running requests too.

namespace omnidp::runtime {

// Installs the handlers for SIGUSR1, SIGTERM and SIGINT and unblocks them in the calling thread (a
// launcher may pass them blocked); restores the previous handlers and mask when destroyed.
// One at a time per process (the count is process-wide; it is reset on construction). Construct
// it on the main thread before starting other threads: they inherit its mask.
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
