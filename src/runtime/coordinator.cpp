#include "omnidp/runtime/coordinator.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <sstream>
#include <tuple>

#include "omnidp/common/log.hpp"
#include "omnidp/config/peak_flops.hpp"
#include "omnidp/models/model_facts.hpp"

namespace omnidp::runtime {
namespace {
std::string shortest_seconds(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A replica heard from last this many seconds ago counts as silent (warned, no ETA): three
// missed heartbeats and a margin for a busy comm thread.
constexpr double silence_after(double heartbeat_s) noexcept { return 3.0 * heartbeat_s + 5.0; }
}  // namespace

Coordinator::Coordinator(CoordinatorOptions options, RequestSource& source, Send send)
    : options_(std::move(options)),
      send_(std::move(send)),
      cost_(describe_model(options_.config.model)),
      work_(options_.config.scheduler, options_.topology.replicas, source, cost_),
      dispatch_policy_(options_.config.scheduler.policy),
      load_(static_cast<std::size_t>(options_.topology.replicas)),
      replicas_(static_cast<std::size_t>(options_.topology.replicas)),
      progress_(options_.progress_out, options_.progress_in_place, options_.progress_interval_s) {
  if (!options_.config.output.metrics_textfile.empty()) {
    metrics_file_.emplace(options_.config.output.metrics_textfile,
                          options_.config.output.metrics_interval_s);
  }
}

double Coordinator::now() const { return options_.now ? options_.now() : steady_seconds(); }

void Coordinator::broadcast(const Message& m) {
  for (int r = 1; r < options_.topology.world_size; ++r) send_(r, m);
  send_(0, m);
}

std::size_t Coordinator::outstanding(int replica) const {
  return static_cast<std::size_t>(load_.at(static_cast<std::size_t>(replica)).outstanding);
}

ProgressSnapshot Coordinator::progress() const {
  ProgressSnapshot s;
  s.done = completed_ + failed_;
  s.failed = failed_;
  s.total = options_.plan.to_run;
  const double t = phase_ == Phase::setup ? go_time_ : now();
  s.elapsed_s = std::max(0.0, t - go_time_);
  if (cost_.calibrated()) {
    const CostFeatures left{options_.plan.total_features.quadratic - done_features_.quadratic,
                            options_.plan.total_features.linear - done_features_.linear};
    s.eta_s = std::max(0.0, cost_.estimate(left)) / options_.topology.replicas;
  }
  // A silent replica may hold the work left: no ETA then, and the progress line says why.
  const double period = options_.config.scheduler.heartbeat_s;
  if (period > 0.0 && (phase_ == Phase::running || phase_ == Phase::draining)) {
    for (int k = 0; k < options_.topology.replicas; ++k) {
      const auto& r = replicas_[static_cast<std::size_t>(k)];
      const double silent = t - r.last_heartbeat;
      if (load_[static_cast<std::size_t>(k)].ready && options_.topology.leader(k) != 0 &&
          silent > silence_after(period)) {
        s.stalled = fmt::format("replica {} (rank {}) silent for {} s", k,
                                options_.topology.leader(k), static_cast<long long>(silent));
        s.eta_s = -1.0;
        break;
      }
    }
  }
  return s;
}

MetricsSnapshot Coordinator::metrics() const {
  MetricsSnapshot m;
  const ProgressSnapshot p = progress();
  m.completed = completed_;
  m.failed = failed_;
  m.running = outstanding_.size();
  const std::size_t accounted = completed_ + failed_ + outstanding_.size();
  m.queued = options_.plan.to_run > accounted ? options_.plan.to_run - accounted : 0;
  m.elapsed_s = p.elapsed_s;
  m.videos_per_minute =
      p.elapsed_s > 0.0 ? 60.0 * static_cast<double>(completed_) / p.elapsed_s : 0.0;
  m.eta_s = p.eta_s;
  // The running request of a replica: its oldest assigned one not yet generated.
  std::vector<const Assigned*> running(static_cast<std::size_t>(options_.topology.replicas), nullptr);
  for (const auto& [id, a] : outstanding_) {
    if (a.generated) continue;
    auto& slot = running[static_cast<std::size_t>(a.replica)];
    if (slot == nullptr || a.seq < slot->seq) slot = &a;
  }
  for (int k = 0; k < options_.topology.replicas; ++k) {
    const auto& r = replicas_[static_cast<std::size_t>(k)];
    const Assigned* a = running[static_cast<std::size_t>(k)];
    for (const int rank : options_.topology.group_ranks(k)) {
      m.ranks.push_back(RankMetrics{rank,
                                    p.elapsed_s > 0.0 ? std::min(1.0, r.busy_s / p.elapsed_s) : 0.0,
                                    a != nullptr ? a->item.request.id : std::string()});
    }
  }
  std::sort(m.ranks.begin(), m.ranks.end(),
            [](const RankMetrics& x, const RankMetrics& y) { return x.rank < y.rank; });
  return m;
}

void Coordinator::start() {
  log_info(fmt::format(
      "coordinator: {} request(s) to run{}{} on {} replica(s), policy {}/{}", options_.plan.to_run,
      (options_.skipped_resume > 0 ? fmt::format(" ({} already done, skipped)", options_.skipped_resume)
                                   : std::string()),
      (options_.plan.filtered > 0
           ? fmt::format(" ({} of other tasks skipped: input.tasks)", options_.plan.filtered)
           : std::string()),
      options_.topology.replicas, to_string(options_.config.scheduler.policy),
      to_string(options_.config.scheduler.order)));
  broadcast(StartMsg{options_.plan.to_run});
}

void Coordinator::handle(const Envelope& envelope) {
  std::visit([&](const auto& m) { on(envelope.from, m); }, envelope.message);
}

template <class M>
void Coordinator::on(int from, const M& m) {
  log_error(fmt::format("coordinator: unexpected {} from rank {}", message_name(Message{m}), from));
}

void Coordinator::on(int from, const ReadyMsg& m) {
  if (phase_ != Phase::setup) return;
  if (!m.ok) {
    fail(m.error);
    return;
  }
  if (m.replica < 0 || m.replica >= options_.topology.replicas ||
      options_.topology.leader(m.replica) != from) {
    fail(ErrorInfo{ErrorKind::runtime,
                   fmt::format("protocol: Ready for replica {} from rank {}", m.replica, from)});
    return;
  }
  auto& r = replicas_[static_cast<std::size_t>(m.replica)];
  auto& load = load_[static_cast<std::size_t>(m.replica)];
  load.ready = true;
  load.slots = std::max(1, m.slots);
  r.device = m.device;
  r.last_heartbeat = now();
  if (!std::all_of(load_.begin(), load_.end(), [](const auto& x) { return x.ready; })) {
    return;
  }
  go_time_ = now();
  last_completion_ = go_time_;
  phase_ = Phase::running;
  log_info("coordinator: every replica is ready; work starts");
  if (drain_requested_) {
    begin_drain(signal_level_ >= 2);
    return;
  }
  dispatch();
  check_done();
}

std::optional<Coordinator::Assigned> Coordinator::release(const std::string& id, int from,
                                                          const char* what) {
  const auto it = outstanding_.find(id);
  if (it == outstanding_.end()) {
    log_error(fmt::format(
        "coordinator: {} for request '{}' that is not outstanding (from rank {}); ignored", what,
        id, from));
    return std::nullopt;
  }
  Assigned a = std::move(it->second);
  outstanding_.erase(it);
  free_slot(a);
  load_[static_cast<std::size_t>(a.replica)].outstanding -= 1;
  return a;
}

void Coordinator::free_slot(Assigned& a) {
  if (a.generated) return;
  a.generated = true;
  auto& r = load_[static_cast<std::size_t>(a.replica)];
  r.in_model -= 1;
  if (r.in_model > 0) r.model_since = now();  // its next request starts now
  r.outstanding_cost -= a.item.key;
  r.pull = false;  // the running request changed; its successor will pull in turn
}

void Coordinator::on(int from, const PullMsg& m) {
  const auto it = outstanding_.find(m.id);
  if (it == outstanding_.end() || it->second.generated || it->second.replica != m.replica) {
    log_debug(fmt::format("coordinator: stale Pull for '{}' from rank {}", m.id, from));
    return;
  }
  load_[static_cast<std::size_t>(m.replica)].pull = true;
  dispatch();
}

void Coordinator::on(int from, const GeneratedMsg& m) {
  const auto it = outstanding_.find(m.id);
  if (it == outstanding_.end()) {
    log_error(fmt::format(
        "coordinator: Generated for request '{}' that is not outstanding (from rank {}); ignored",
        m.id, from));
    return;
  }
  free_slot(it->second);
  dispatch();
}

void Coordinator::on(int from, const DoneMsg& m) {
  auto a = release(m.id, from, "Done");
  if (!a) return;
  auto& r = replicas_[static_cast<std::size_t>(a->replica)];
  r.busy_s += m.seconds;
  r.last_heartbeat = now();
  last_completion_ = now();
  done_features_.quadratic += a->item.features.quadratic;
  done_features_.linear += a->item.features.linear;
  if (m.status == RequestStatus::ok) {
    ++completed_;
    latencies_.push_back(m.seconds);
    if (m.model_tflop > 0.0) {  // the MFU figures (docs/performance.md, "MFU")
      flops_.push_back({m.model_tflop, m.seconds, options_.topology.group_size,
                        resolve_peak(options_.config.runtime, r.device)});
    }
    forwards_.add(m.forwards, m.forwards_computed);  // the step cache's skip rate
    if (a->item.features.quadratic > 0.0) {
      cost_.observe(a->item.features, m.seconds);
      if (cost_.observations() <= 32 || cost_.observations() % 32 == 0) work_.rekey();
    }
  } else {
    ++failed_;
    log_warn(fmt::format("request '{}' failed on rank {} (attempt {}): {}", m.id, m.rank, m.attempt,
                         m.error));
  }
  const int drain_after = options_.config.faults.drain_after;
  if (drain_after > 0 && phase_ == Phase::running &&
      completed_ + failed_ >= static_cast<std::size_t>(drain_after)) {
    log_info(fmt::format("coordinator: faults.drain_after={} reached", drain_after));
    begin_drain(false);
  }
  progress_.update(progress(), now());
  dispatch();
  if (metrics_file_) (void)metrics_file_->update(metrics(), now());
  check_done();
}

void Coordinator::on(int from, const RetryMsg& m) {
  auto a = release(m.id, from, "Retry");
  if (!a) return;
  replicas_[static_cast<std::size_t>(a->replica)].busy_s += m.seconds;
  if (phase_ == Phase::running) {
    log_warn(fmt::format(
        "request '{}' failed transiently on replica {} (attempt {}): {}; retrying{}", m.id, a->replica,
        m.attempt, m.error, (options_.topology.replicas > 1 ? " on another replica" : "")));
    a->item.attempt = m.attempt + 1;
    work_.retry(std::move(a->item), a->replica);
  }
  dispatch();
  check_done();
}

void Coordinator::on(int from, const ReturnedMsg& m) {
  for (const auto& id : m.ids) {
    auto a = release(id, from, "Returned");
    if (!a) continue;
    if (phase_ == Phase::running) work_.retry(std::move(a->item), a->replica);
  }
  dispatch();
  check_done();
}

void Coordinator::on(int from, const SignalMsg& m) {
  if (m.level <= signal_level_) return;
  signal_level_ = m.level;
  log_warn(
      fmt::format("coordinator: drain signal {} (level {}) from rank {}", m.signal, m.level, from));
  if (phase_ == Phase::setup) {
    drain_requested_ = true;
  } else if (phase_ == Phase::running) {
    begin_drain(signal_level_ >= 2);
  } else if (phase_ == Phase::draining && signal_level_ >= 2 && !abandon_sent_) {
    begin_drain(true);
  }
}

void Coordinator::on(int /*from*/, const HeartbeatMsg& m) {
  if (m.replica < 0 || m.replica >= options_.topology.replicas) return;
  auto& r = replicas_[static_cast<std::size_t>(m.replica)];
  r.last_heartbeat = now();
  r.warned_silent = false;
}

void Coordinator::on(int from, const FatalMsg& m) {
  log_error(fmt::format("coordinator: rank {} failed: {}", from, m.error.message));
  if (!has_fatal_) {
    has_fatal_ = true;
    fatal_ = m.error;
  }
  if (phase_ == Phase::setup) {
    fail(m.error);
  } else if (phase_ == Phase::running) {
    begin_drain(false);
  }
}

void Coordinator::on(int from, const ClosedMsg& m) {
  if (phase_ != Phase::closing) return;
  // Each rank's own busy seconds (docs/runtime.md, "Replica groups").
  if (from >= 0 && from < options_.topology.world_size && options_.topology.works(from)) {
    summary_inputs_.busy_s_per_rank[static_cast<std::size_t>(from)] = m.busy_s;
  }
  if (++closed_ == options_.topology.world_size) {
    summary_ = make_summary(summary_inputs_);
    finish();
  }
}

void Coordinator::dispatch() {
  if (phase_ != Phase::running) return;
  try {
    while (true) {
      // Requests not handed out yet (plan.to_run comes from the pre-start pass).
      const std::size_t left =
          (options_.plan.to_run > handed_out_ ? options_.plan.to_run - handed_out_ : 0) +
          work_.retries();
      const std::vector<int> order = dispatch_policy_.candidates(load_, left);
      bool assigned = false;
      for (int k : order) {
        auto item = work_.next_for(k);
        if (!item) continue;
        const int cap = options_.config.faults.drain_after;
        if (cap > 0 && !item->handed_out && handed_out_ >= static_cast<std::size_t>(cap)) {
          work_.put_back(std::move(*item));  // faults.drain_after: only the first N requests
          return;
        }
        if (options_.deadline && !fits_deadline(k, *item)) {
          work_.put_back(std::move(*item));
          continue;
        }
        auto& r = load_[static_cast<std::size_t>(k)];
        if (r.in_model == 0) r.model_since = now();
        r.in_model += 1;
        r.outstanding += 1;
        r.outstanding_cost += item->key;
        if (!item->handed_out) ++handed_out_;
        item->handed_out = true;
        AssignMsg msg{item->request, item->attempt};
        const std::string id = item->request.id;
        outstanding_.emplace(id, Assigned{std::move(*item), k, false, ++assign_seq_});
        send_(options_.topology.leader(k), msg);
        assigned = true;
        break;
      }
      if (!assigned) {
        drain_if_nothing_fits();
        return;
      }
    }
  } catch (const Error& e) {
    on(0, FatalMsg{ErrorInfo{e.kind(), e.what()}});
  } catch (const std::exception& e) {
    on(0, FatalMsg{ErrorInfo{ErrorKind::runtime, e.what()}});
  }
}

double Coordinator::model_free_at(int k) const {
  // The estimates of its requests not yet generated, oldest (the running one) first.
  std::vector<std::pair<std::uint64_t, double>> in_model;
  for (const auto& [id, a] : outstanding_) {
    if (a.replica == k && !a.generated)
      in_model.emplace_back(a.seq, cost_.estimate(a.item.features));
  }
  std::sort(in_model.begin(), in_model.end());
  std::vector<double> seconds;
  for (const auto& [seq, s] : in_model) seconds.push_back(s);
  return DeadlineGate::model_free_at(now(), load_[static_cast<std::size_t>(k)], seconds);
}

bool Coordinator::fits_deadline(int k, const WorkItem& item) {
  auto& r = load_[static_cast<std::size_t>(k)];
  const DeadlineGate gate(*options_.deadline, options_.config.scheduler.deadline_margin_s);
  std::optional<double> estimate;
  double free_at = now();
  if (cost_.calibrated()) {
    estimate = cost_.estimate(item.features);
    free_at = model_free_at(k);
  }
  const auto decision = gate.decide(now(), k, r, item.request.id, estimate, free_at);
  if (decision.fit == DeadlineGate::Fit::no) {
    r.closed = true;
    deadline_closed_any_ = true;
    log_info(decision.why);
  }
  return decision.fit == DeadlineGate::Fit::yes;
}

void Coordinator::drain_if_nothing_fits() {
  // Requests handed out passed the gate: they run (queued ones too). Once none is outstanding,
  // no replica can get work again (each was just offered its next request), so drain.
  if (!deadline_closed_any_ || phase_ != Phase::running || !outstanding_.empty()) return;
  if (work_.exhausted()) return;  // nothing left anyway: the normal end
  log_warn(
      "coordinator: deadline: no further request fits before the job's end minus "
      "scheduler.deadline_margin_s; draining (exit 75: run again to finish the rest)");
  begin_drain(false);
}

void Coordinator::begin_drain(bool abandon) {
  if (phase_ == Phase::running) {
    phase_ = Phase::draining;
    drained_ = true;
    log_warn(fmt::format(
        "coordinator: draining: no new work; {} assigned request(s) finish or come back{}",
        outstanding_.size(), (abandon ? " (abandoned)" : "")));
    if (options_.on_drain) {
      SummaryInputs in = summary_inputs_now();
      in.interrupted = completed_ + failed_ < options_.plan.to_run;
      try {
        options_.on_drain(make_summary(in));
      } catch (const std::exception& e) {
        log_warn(std::string("coordinator: no summary.json at the drain's start: ") + e.what());
      }
    }
  } else if (phase_ != Phase::draining) {
    return;
  }
  if (abandon) {
    if (abandon_sent_) return;
    abandon_sent_ = true;
    log_warn("coordinator: abandoning running requests");
  }
  broadcast(DrainMsg{abandon});
  check_done();
}

void Coordinator::check_done() {
  if (phase_ == Phase::running && work_.exhausted() && outstanding_.empty()) begin_shutdown();
  if (phase_ == Phase::draining && outstanding_.empty()) begin_shutdown();
}

void Coordinator::begin_shutdown() {
  phase_ = Phase::closing;
  SummaryInputs in = summary_inputs_now();
  in.interrupted = drained_ && completed_ + failed_ < options_.plan.to_run;
  summary_inputs_ = in;
  summary_ = make_summary(in);  // the busy seconds follow with the ranks' Closed
  progress_.finish(progress());
  if (metrics_file_) metrics_file_->finish(metrics());
  broadcast(ShutdownMsg{});
}

SummaryInputs Coordinator::summary_inputs_now() const {
  SummaryInputs in;
  in.total = options_.plan.to_run;
  in.completed = completed_;
  in.failed = failed_;
  in.skipped_resume = options_.skipped_resume;
  in.skipped_tasks = options_.plan.filtered;
  in.makespan_s = std::max(0.0, last_completion_ - go_time_);
  in.latencies_s = latencies_;
  in.flops = flops_;
  in.forwards = forwards_;
  in.busy_s_per_rank.assign(static_cast<std::size_t>(options_.topology.world_size), 0.0);
  in.working_ranks = 0;
  for (int r = 0; r < options_.topology.world_size; ++r) {
    if (options_.topology.works(r)) ++in.working_ranks;
  }
  in.replicas = options_.topology.replicas;
  in.world_size = options_.topology.world_size;
  in.tensor_parallel_size = options_.config.parallel.tensor_parallel_size;
  in.sequence_parallel_size = options_.config.parallel.sequence_parallel_size;
  in.cfg_parallel_size = options_.config.parallel.cfg_parallel_size;
  in.policy = to_string(options_.config.scheduler.policy);
  in.order = to_string(options_.config.scheduler.order);
  return in;
}

void Coordinator::finish() {
  if (!has_fatal_ && options_.finalize) {
    try {
      options_.finalize(summary_);
    } catch (const Error& e) {
      has_fatal_ = true;
      fatal_ = ErrorInfo{e.kind(), e.what()};
    } catch (const std::exception& e) {
      has_fatal_ = true;
      fatal_ = ErrorInfo{ErrorKind::runtime, e.what()};
    }
  }
  // Exit 75 asks for a rerun: only when this run handed something out, or when the next can
  // (issue 39, class 6). A deadline that let nothing be handed out (already past at start, or
  // closer than scheduler.deadline_margin_s) leaves the next run where this one was: exit 2,
  // not a requeue loop. A signal's drain stays 75 (the rerun is not stopped by it).
  if (!has_fatal_ && summary_.interrupted && deadline_closed_any_ && handed_out_ == 0 &&
      signal_level_ == 0) {
    has_fatal_ = true;
    fatal_ = ErrorInfo{
        ErrorKind::config,
        "deadline: no request was handed out: the job's end minus scheduler.deadline_margin_s (" +
            shortest_seconds(options_.config.scheduler.deadline_margin_s) +
            " s) had passed when the job started, so a rerun would do the same (exit 2, not the "
            "75 that asks for one): give a later --deadline or a smaller "
            "scheduler.deadline_margin_s"};
  }
  FinishMsg msg;
  if (has_fatal_) {
    msg.has_error = true;
    msg.error = fatal_;
    Error as_error(fatal_.kind, fatal_.message);
    msg.exit_code = static_cast<int>(as_error.exit_code());
  } else if (summary_.interrupted) {
    msg.exit_code = static_cast<int>(ExitCode::interrupted);
  } else if (failed_ > 0) {
    msg.exit_code = static_cast<int>(ExitCode::some_failed);
  } else {
    msg.exit_code = static_cast<int>(ExitCode::ok);
  }
  exit_code_ = msg.exit_code;
  phase_ = Phase::finished;
  broadcast(msg);
}

void Coordinator::fail(const ErrorInfo& error) {
  if (phase_ == Phase::finished) return;
  has_fatal_ = true;
  fatal_ = error;
  if (metrics_file_) metrics_file_->finish(metrics());
  FinishMsg msg;
  msg.has_error = true;
  msg.error = error;
  msg.exit_code = static_cast<int>(Error(error.kind, error.message).exit_code());
  exit_code_ = msg.exit_code;
  phase_ = Phase::finished;
  broadcast(msg);
}

void Coordinator::tick() {
  if (phase_ != Phase::running && phase_ != Phase::draining) return;
  const double t = now();
  progress_.update(progress(), t);
  if (metrics_file_) (void)metrics_file_->update(metrics(), t);
  const double period = options_.config.scheduler.heartbeat_s;
  if (period <= 0.0) return;
  for (int k = 0; k < options_.topology.replicas; ++k) {
    auto& r = replicas_[static_cast<std::size_t>(k)];
    if (!load_[static_cast<std::size_t>(k)].ready) continue;
    const double silent = t - r.last_heartbeat;
    if (!r.warned_silent && silent > silence_after(period)) {
      r.warned_silent = true;
      log_warn(fmt::format("coordinator: replica {} (rank {}) silent for {} s", k,
                           options_.topology.leader(k), static_cast<int>(silent)));
    }
    // Rank 0's own replica shares this process: its comm thread cannot be silent while this runs.
    const double limit = options_.config.scheduler.silent_timeout_s;
    if (limit > 0.0 && silent > limit && abort_reason_.empty() && options_.topology.leader(k) != 0) {
      abort_reason_ = fmt::format(
          "coordinator: replica {} (rank {}) sent nothing for {} s (scheduler.silent_timeout_s = "
          "{:g}): the process is stopped, hung outside a request or unreachable; aborting the job "
          "(exit 75) so that a rerun finishes it (the replica's requests are generated again)",
          k, options_.topology.leader(k), static_cast<long long>(silent), limit);
    }
  }
}

}  // namespace omnidp::runtime
