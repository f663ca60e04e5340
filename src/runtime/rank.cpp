#include "omnidp/runtime/rank.hpp"

#include <fmt/format.h>
#include <array>
#include <chrono>
#include <cmath>
#include <csignal>
#include <exception>
#include <optional>
#include <thread>
#include <utility>
#include <variant>

#include "omnidp/common/log.hpp"
#include "omnidp/results/attempt_log.hpp"
#include "omnidp/runtime/actor.hpp"
#include "omnidp/runtime/coordinator_actor.hpp"
#include "omnidp/runtime/worker.hpp"
#include "omnidp/runtime/writer.hpp"

namespace omnidp::runtime {
namespace {

// The rank's comm thread: the only one that touches the transports. It starts the rank's
// actors on their threads, routes the messages that arrive to them (the coordinator's to its
// inbox, the rest to on_agent), sends what they post, and watches the signals, the request
// timeout and the heartbeats.
class Rank {
 public:
  explicit Rank(const RankSetup& setup)
      : s_(setup),
        c_(setup),
        rank_(c_.rank),
        replica_(c_.replica),
        leader_(c_.leader),
        member_(c_.member),
        coordinator_actor_(c_, coord_inbox_),
        worker_actor_(c_),
        writer_actor_(c_) {}
  ~Rank() { stop_threads(); }
  Rank(const Rank&) = delete;
  Rank& operator=(const Rank&) = delete;

  ExitCode run();

 private:
  void loop();
  [[nodiscard]] bool poll_group();
  void route(const Envelope& env);
  void on_agent(const Message& m);
  void on_local(LocalEvent ev);
  void on_loaded(Loaded loaded);
  void send(int dest, const Message& m);
  void check_signals();
  void check_running();
  void stop_threads() noexcept;

  const RankSetup& s_;
  ActorContext c_;
  const Config& config_ = c_.config;
  int rank_;
  int replica_;
  bool leader_;
  bool member_;  // a working rank of a group that is not its leader

  Mailbox<Envelope> coord_inbox_;
  CoordinatorActor coordinator_actor_;
  Worker worker_actor_;
  Writer writer_actor_;
  std::thread coordinator_;
  std::thread worker_;
  std::thread writer_;

  // Comm-thread state.
  bool finished_ = false;
  bool started_ = false;          // Start arrived
  std::optional<Loaded> loaded_;  // the model loaded before Start
  FinishMsg finish_;
  bool draining_ = false;
  bool ready_sent_ = false;
  bool writer_broken_ = false;
  std::string device_;
  std::string running_id_;
  std::string running_key_;
  int running_attempt_ = 0;
  double running_since_ = 0.0;
  double busy_s_ = 0.0;
  double next_heartbeat_ = 0.0;
  int reported_signals_ = 0;
  bool shutdown_seen_ = false;  // a member: Shutdown arrived
  bool worker_exited_ = false;  // a member: its worker thread ended
};

ExitCode Rank::run() {
  if (rank_ == 0) coordinator_ = std::thread([this] { coordinator_actor_.run(); });
  // Leaders load their models while rank 0 reads the manifest; the results files are opened
  // only after Start, so a job that stops before it (a bad manifest) leaves no output.
  // Group members load theirs too: they run every request of the group with the leader.
  if (leader_ || member_) worker_ = std::thread([this] { worker_actor_.run(); });
  try {
    loop();
  } catch (const JobAborted&) {
    stop_threads();
    throw;
  } catch (const std::exception& e) {
    log_error(std::string("rank failure: ") + e.what());
    s_.world->abort_job(static_cast<int>(ExitCode::some_failed), e.what());
  }
  stop_threads();
  s_.world->flush();
  if (s_.group != nullptr) s_.group->flush();
  if (finish_.has_error) {
    if (coordinator_actor_.error()) std::rethrow_exception(coordinator_actor_.error());
    throw Error(finish_.error.kind, finish_.error.message);
  }
  return static_cast<ExitCode>(finish_.exit_code);
}

void Rank::stop_threads() noexcept {
  c_.abandon.store(true);
  c_.work.close();
  c_.writes.close();
  coord_inbox_.close();
  for (auto* t : {&coordinator_, &worker_, &writer_}) {
    if (t->joinable()) t->join();
  }
}

void Rank::loop() {
  constexpr auto kMinIdle = std::chrono::microseconds(50);
  constexpr auto kMaxIdle = std::chrono::microseconds(2000);
  auto idle = kMinIdle;
  while (!finished_) {
    bool active = false;
    for (int i = 0; i < 64 && !finished_; ++i) {
      auto env = poll_message(*s_.world);
      if (!env) break;
      route(*env);
      active = true;
    }
    if (poll_group()) active = true;
    while (!finished_) {
      auto ev = c_.events.try_pop();
      if (!ev) break;
      on_local(std::move(*ev));
      active = true;
    }
    if (finished_) break;
    check_signals();
    check_running();
    if (active) {
      idle = kMinIdle;
      continue;
    }
    if (auto ev = c_.events.pop_for(idle)) {
      on_local(std::move(*ev));
      idle = kMinIdle;
    } else {
      idle = std::min(idle * 2, kMaxIdle);
    }
  }
}

// The replica group's messages (a member: the leader's GroupRun/GroupIdle); whether any came.
bool Rank::poll_group() {
  if (s_.group == nullptr) return false;
  bool active = false;
  while (auto env = poll_message(*s_.group)) {
    if (auto* run = std::get_if<GroupRunMsg>(&env->message)) {
      if (!member_) {
        throw RuntimeError(fmt::format("protocol: GroupRun at rank {}, not a group member", rank_));
      }
      log_debug("group: leader runs '" + run->request.id + "': running it with the group");
      c_.work.push(AssignMsg{std::move(run->request), run->attempt});
      active = true;
    } else if (const auto* group_idle = std::get_if<GroupIdleMsg>(&env->message)) {
      log_debug("group: leader done with '" + group_idle->id + "'");
    }
  }
  return active;
}

void Rank::send(int dest, const Message& m) {
  if (dest == rank_) {
    route(Envelope{rank_, m});
  } else {
    send_message(*s_.world, dest, m);
  }
}

void Rank::route(const Envelope& env) {
  if (for_coordinator(env.message)) {
    if (rank_ != 0) {
      throw RuntimeError(fmt::format("protocol: {} for the coordinator arrived at rank {}",
                                     message_name(env.message), rank_));
    }
    coord_inbox_.push(env);
    return;
  }
  on_agent(env.message);
}

void Rank::on_agent(const Message& m) {
  if (std::holds_alternative<StartMsg>(m)) {
    started_ = true;
    if (leader_) {
      writer_ = std::thread([this] { writer_actor_.run(); });
      if (loaded_) on_loaded(std::exchange(loaded_, std::nullopt).value());
    }
  } else if (const auto* assign = std::get_if<AssignMsg>(&m)) {
    if (!leader_)
      throw RuntimeError(fmt::format("protocol: Assign at rank {}, not a replica leader", rank_));
    if (draining_ || writer_broken_) {
      send(0, ReturnedMsg{replica_, {assign->request.id}});
    } else {
      c_.work.push(*assign);
    }
  } else if (const auto* drain = std::get_if<DrainMsg>(&m)) {
    draining_ = true;
    if (drain->abandon) c_.abandon.store(true);
    if (leader_) {
      ReturnedMsg back{replica_, {}};
      for (auto& a : c_.work.take_all()) back.ids.push_back(a.request.id);
      log_info(fmt::format("drain: {} queued request(s) given back{}", back.ids.size(),
                           (running_id_.empty() ? std::string() : ", '" + running_id_ + "' running")));
      if (!back.ids.empty()) send(0, back);
    }
  } else if (std::holds_alternative<ShutdownMsg>(m)) {
    if (leader_ && writer_.joinable()) {
      c_.work.close();    // the worker is idle: every assigned request was resolved
      c_.writes.close();  // the writer closes the sink, then posts WriterClosed
    } else if (member_ && worker_.joinable()) {
      // Closed once the member's worker has finished its last request (WorkerExited), so
      // its busy seconds are complete.
      shutdown_seen_ = true;
      // Every GroupRun of the group was sent before the last Done that led to the Shutdown:
      // run those still waiting on the group transport before the mailbox closes.
      (void)poll_group();
      c_.work.close();
      if (worker_exited_) send(0, ClosedMsg{busy_s_});
    } else {
      send(0, ClosedMsg{busy_s_});
    }
  } else if (const auto* fin = std::get_if<FinishMsg>(&m)) {
    finished_ = true;
    finish_ = *fin;
  } else {
    throw RuntimeError(fmt::format("protocol: unexpected {} at rank {}", message_name(m), rank_));
  }
}

void Rank::on_local(LocalEvent ev) {
  if (auto* out = std::get_if<OutMsg>(&ev)) {
    send(out->dest, out->message);
  } else if (auto* loaded = std::get_if<Loaded>(&ev)) {
    if (started_) {
      on_loaded(std::move(*loaded));
    } else {
      loaded_ = std::move(*loaded);  // reported once Start arrives
    }
  } else if (auto* opened = std::get_if<Opened>(&ev)) {
    if (opened->error) {
      send(0, ReadyMsg{replica_, 0, device_, false, error_info(opened->error)});
    } else {
      send(0, ReadyMsg{replica_, 1 + std::max(0, config_.scheduler.prefetch), device_, true, {}});
      ready_sent_ = true;
      next_heartbeat_ = c_.clock_s() + config_.scheduler.heartbeat_s;
    }
  } else if (auto* started = std::get_if<WorkerStarted>(&ev)) {
    running_id_ = started->assignment.request.id;
    running_key_ = started->assignment.request.input_key;
    running_attempt_ = started->assignment.attempt;
    running_since_ = started->since;
    if (s_.group != nullptr) {  // the members run it with the leader
      const GroupRunMsg run{started->assignment.request, started->assignment.attempt};
      for (int m = 1; m < s_.group->size(); ++m) send_message(*s_.group, m, run, kGroupTag);
    }
  } else if (auto* nearly = std::get_if<WorkerNearlyDone>(&ev)) {
    if (!draining_) send(0, PullMsg{replica_, nearly->id});
  } else if (auto* idle = std::get_if<WorkerIdle>(&ev)) {
    running_id_.clear();
    busy_s_ = idle->busy_s;
    if (s_.group != nullptr && leader_) {
      for (int m = 1; m < s_.group->size(); ++m)
        send_message(*s_.group, m, GroupIdleMsg{idle->id}, kGroupTag);
    }
  } else if (auto* failed = std::get_if<WriterFailed>(&ev)) {
    // The rank stops taking work (Assigns are given back) and the job drains (a full disk:
    // docs/reliability.md). One line, with the rank file and the cause.
    writer_broken_ = true;
    log_error("results writer failed; this rank takes no more work: " + failed->error.message);
    send(0, FatalMsg{failed->error});
  } else if (std::holds_alternative<WriterClosed>(ev)) {
    send(0, ClosedMsg{busy_s_});
  } else if (auto* exited = std::get_if<WorkerExited>(&ev)) {
    worker_exited_ = true;
    busy_s_ = exited->busy_s;
    if (shutdown_seen_) send(0, ClosedMsg{busy_s_});
  }
}

void Rank::on_loaded(Loaded loaded) {
  if (member_) {  // a member has no results file and reports no Ready; a failed load ends the job
    if (loaded.error) send(0, FatalMsg{error_info(loaded.error)});
    return;
  }
  if (loaded.error) {
    send(0, ReadyMsg{replica_, 0, "", false, error_info(loaded.error)});
  } else {
    device_ = loaded.device;
    c_.writes.push(OpenCmd{device_});
  }
}

void Rank::check_signals() {
  if (!s_.signal_level) return;
  const int level = s_.signal_level();
  if (level <= reported_signals_) return;
  reported_signals_ = level;
  const int sig = s_.last_signal ? s_.last_signal() : 0;
  log_warn(fmt::format("received drain signal {} ({}{}", sig, level,
                       (level >= 2 ? "): abandoning running requests" : "): draining the job")));
  send(0, SignalMsg{level, sig});
}

void Rank::check_running() {
  if (!leader_ || !ready_sent_) return;
  const double t = c_.clock_s();
  const double timeout = config_.scheduler.request_timeout_s;
  if (timeout > 0.0 && !running_id_.empty() && t - running_since_ > timeout) {
    const std::string why = fmt::format(
        "request '{}' on rank {} has run for {:g} s, longer than scheduler.request_timeout_s = "
        "{:g} s; aborting the job (rerun with --resume to finish the rest)",
        running_id_, rank_, std::round((t - running_since_) * 10.0) / 10.0, timeout);
    log_error(why);
    // This attempt is the reason the job ends: it counts against the request, whatever
    // mpirun's teardown signals note after it (results/attempt_log.hpp).
    results::AttemptLog::note_timeout(running_id_, running_key_, running_attempt_);
    s_.world->abort_job(static_cast<int>(ExitCode::interrupted), why);
  }
  if (config_.scheduler.heartbeat_s > 0.0 && t >= next_heartbeat_ && !finished_) {
    next_heartbeat_ = t + config_.scheduler.heartbeat_s;
    send(0, HeartbeatMsg{replica_, running_id_, running_id_.empty() ? 0.0 : t - running_since_,
                         busy_s_});
  }
}

}  // namespace

ExitCode run_rank(const RankSetup& setup) {
  if (setup.options == nullptr || setup.world == nullptr) {
    throw RuntimeError("run_rank: options and world transport are required");
  }
  set_log_rank(setup.world->rank());
  Rank rank(setup);
  return rank.run();
}

std::vector<RankOutcome> run_job_in_process(const JobOptions& options, int world_size,
                                            const std::vector<const std::atomic<int>*>& signal_levels) {
  const Topology topology = make_topology(options.config.parallel, world_size);
  InProcessNetwork world(world_size);
  std::vector<std::unique_ptr<InProcessNetwork>> groups;
  // Per replica, per axis, per sub-group (axis_color): the sub-group's collectives in axis order.
  using SubGroups = std::vector<std::vector<std::unique_ptr<Collective>>>;
  std::vector<std::array<SubGroups, 3>> collectives;
  constexpr std::array<GroupAxis, 3> kAxes{GroupAxis::cfg, GroupAxis::sequence, GroupAxis::tensor};
  if (topology.group_size > 1) {
    for (int k = 0; k < topology.replicas; ++k) {
      groups.push_back(std::make_unique<InProcessNetwork>(topology.group_size));
      const auto ranks = topology.group_ranks(k);
      const std::string name = replica_group_name(k, ranks);
      auto& axes = collectives.emplace_back();
      for (std::size_t a = 0; a < kAxes.size(); ++a) {
        const int n = topology.axis_size(kAxes[a]);
        if (n == 1) continue;
        for (int color = 0; color < topology.group_size / n; ++color) {
          int member = 0;  // a group rank of this color
          while (topology.axis_color(member, kAxes[a]) != color) ++member;
          axes[a].push_back(make_in_process_collectives(
              n, axis_group_name(name, to_string(kAxes[a]),
                                 topology.axis_ranks(ranks[0] + member, kAxes[a]))));
        }
      }
    }
  }
  std::vector<RankOutcome> outcomes(static_cast<std::size_t>(world_size));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world_size; ++rank) {
    threads.emplace_back([&, rank] {
      RankSetup setup;
      setup.options = &options;
      setup.world = &world.endpoint(rank);
      const int replica = topology.replica(rank);
      if (!groups.empty() && replica >= 0) {
        setup.group =
            &groups[static_cast<std::size_t>(replica)]->endpoint(rank - topology.leader(replica));
        const int g = rank - topology.leader(replica);
        auto& axes = collectives[static_cast<std::size_t>(replica)];
        Collective** slots[3] = {&setup.axes.cfg, &setup.axes.sequence, &setup.axes.tensor};
        for (std::size_t a = 0; a < kAxes.size(); ++a) {
          if (axes[a].empty()) continue;
          *slots[a] = axes[a][static_cast<std::size_t>(topology.axis_color(g, kAxes[a]))]
                          [static_cast<std::size_t>(topology.axis_index(g, kAxes[a]))]
                              .get();
        }
      }
      setup.topology = topology;
      setup.local_rank = rank;
      setup.host = "in-process";
      if (static_cast<std::size_t>(rank) < signal_levels.size() &&
          signal_levels[static_cast<std::size_t>(rank)] != nullptr) {
        const std::atomic<int>* level = signal_levels[static_cast<std::size_t>(rank)];
        setup.signal_level = [level] { return level->load(); };
        setup.last_signal = [] { return SIGUSR1; };
      }
      auto& out = outcomes[static_cast<std::size_t>(rank)];
      try {
        out.code = run_rank(setup);
      } catch (const Error& e) {
        out.threw = true;
        out.kind = e.kind();
        out.error = e.what();
      } catch (const std::exception& e) {
        out.threw = true;
        out.error = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return outcomes;
}

}  // namespace omnidp::runtime
