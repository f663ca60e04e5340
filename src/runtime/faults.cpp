#include "omnidp/runtime/faults.hpp"

#include <fmt/format.h>
#include <csignal>
#include <string>
#include <utility>

#include "omnidp/common/log.hpp"
#include "omnidp/results/attempt_log.hpp"

namespace omnidp::runtime {
namespace {

class KillAfterWrites final : public ResultSink {
 public:
  KillAfterWrites(std::unique_ptr<ResultSink> inner, int limit, int rank, bool stop)
      : inner_(std::move(inner)), limit_(limit), rank_(rank), stop_(stop) {}
  void write(const ResultRecord& record, const Video* video) override {
    inner_->write(record, video);
    if (++writes_ == limit_) {
      log_warn(fmt::format("faults.kill_rank: rank {} {} itself after {} completions", rank_,
                           stop_ ? "stops" : "kills", writes_));
      // A kill from outside (a count of completions, not a request): what it cuts short is no
      // evidence against a request (results/attempt_log.hpp).
      results::AttemptLog::note_signal(stop_ ? SIGSTOP : SIGKILL);
      std::raise(stop_ ? SIGSTOP : SIGKILL);
    }
  }
  void close() override { inner_->close(); }

 private:
  std::unique_ptr<ResultSink> inner_;
  int limit_;
  int rank_;
  bool stop_;
  int writes_ = 0;
};

}  // namespace

std::unique_ptr<ResultSink> with_kill_after_writes(std::unique_ptr<ResultSink> sink,
                                                   const FaultConfig& faults, int rank) {
  if (!sink || faults.kill_rank != rank || faults.kill_after <= 0 || faults.kill_in_write) {
    return sink;
  }
  return std::make_unique<KillAfterWrites>(std::move(sink), faults.kill_after, rank,
                                           faults.stop_not_kill);
}

std::function<void()> kill_in_write_hook(const FaultConfig& faults, int rank) {
  if (!faults.kill_in_write || faults.kill_after <= 0 || faults.kill_rank != rank) return {};
  return [writes = 0, limit = faults.kill_after, rank]() mutable {
    if (++writes == limit) {
      log_warn(
          fmt::format("faults.kill_in_write: rank {} kills itself inside write {}", rank, writes));
      results::AttemptLog::note_signal(SIGKILL);  // a kill from outside, as above
      std::raise(SIGKILL);
    }
  };
}

}  // namespace omnidp::runtime
