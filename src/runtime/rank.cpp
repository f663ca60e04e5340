#include "omnidp/runtime/rank.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <exception>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>
#include <variant>

#include "omnidp/common/log.hpp"
#include "omnidp/config/numerics.hpp"
#include "omnidp/manifest/file_hash_cache.hpp"
#include "omnidp/manifest/manifest.hpp"
#include "omnidp/results/summary.hpp"
#include "omnidp/runtime/coordinator.hpp"
#include "omnidp/runtime/mailbox.hpp"
#include "omnidp/runtime/plan.hpp"

namespace omnidp::runtime {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

double steady_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
double unix_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

ErrorInfo error_info(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const Error& err) {
    return ErrorInfo{err.kind(), err.what()};
  } catch (const std::exception& err) {
    return ErrorInfo{ErrorKind::runtime, err.what()};
  } catch (...) {
    return ErrorInfo{ErrorKind::runtime, "unknown exception"};
  }
}

// A failure that may go away on another attempt: TransientModelError, or an out-of-memory
// report from a library (e.g. a c10::Error "CUDA out of memory").
bool looks_transient(const std::string& what) {
  return what.find("out of memory") != std::string::npos ||
         what.find("CUDA error: an illegal memory access") != std::string::npos;
}

// Local events posted to the comm thread by the rank's other actors.
struct OutMsg {
  int dest = 0;
  Message message;
};
struct Loaded {
  std::string device;
  std::exception_ptr error;
};
struct Opened {
  std::exception_ptr error;
};
struct WorkerStarted {
  AssignMsg assignment;
  double since = 0.0;  // clock_s() on the worker when it started
};
struct WorkerNearlyDone {
  std::string id;
};
struct WorkerIdle {
  std::string id;
  double busy_s = 0.0;
};
struct WriterFailed {
  ErrorInfo error;
};
struct WriterClosed {};
struct WorkerExited {  // a group member's worker thread ended (its busy seconds are final)
  double busy_s = 0.0;
};
using LocalEvent = std::variant<OutMsg, Loaded, Opened, WorkerStarted, WorkerNearlyDone, WorkerIdle,
                                WriterFailed, WriterClosed, WorkerExited>;

struct OpenCmd {
  std::string device;
};
struct WriteJob {
  ResultRecord record;
  Video video;  // empty when failed
};
using WriterItem = std::variant<OpenCmd, WriteJob>;

std::string shortest(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

class RankRuntime {
 public:
  explicit RankRuntime(const RankSetup& setup)
      : s_(setup),
        options_(*setup.options),
        config_(setup.options->config),
        rank_(setup.world->rank()),
        replica_(setup.topology.replica(rank_)),
        leader_(setup.topology.is_leader(rank_)),
        member_(replica_ >= 0 && !leader_) {}
  ~RankRuntime() { stop_threads(); }
  RankRuntime(const RankRuntime&) = delete;
  RankRuntime& operator=(const RankRuntime&) = delete;

  ExitCode run();

 private:
  void loop();
  void route(const Envelope& env);
  void on_agent(const Message& m);
  void on_local(LocalEvent ev);
  void on_loaded(Loaded loaded);
  void send(int dest, const Message& m);
  void check_signals();
  void check_running();
  void stop_threads() noexcept;

  void coordinator_main();
  void worker_main();
  void run_as_member(Pipeline& pipeline, const AssignMsg& assignment, double& busy);
  void writer_main();
  void post(int dest, Message m) { local_.push(OutMsg{dest, std::move(m)}); }
  // Durations and the timeout watch: the injected clock (tests), else the steady clock.
  [[nodiscard]] double clock_s() const { return options_.clock ? options_.clock() : steady_s(); }

  const RankSetup& s_;
  const JobOptions& options_;
  const Config& config_;
  int rank_;
  int replica_;
  bool leader_;
  bool member_;  // a working rank of a group that is not its leader

  Mailbox<LocalEvent> local_;
  Mailbox<Envelope> coord_inbox_;
  Mailbox<AssignMsg> work_;
  Mailbox<WriterItem> writes_;
  std::atomic<bool> abandon_{false};
  std::thread coordinator_;
  std::thread worker_;
  std::thread writer_;
  std::exception_ptr coordinator_error_;

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
  double running_since_ = 0.0;
  double busy_s_ = 0.0;
  double next_heartbeat_ = 0.0;
  int reported_signals_ = 0;
  bool shutdown_seen_ = false;   // a member: Shutdown arrived
  bool worker_exited_ = false;   // a member: its worker thread ended
};

ExitCode RankRuntime::run() {
  if (rank_ == 0) coordinator_ = std::thread([this] { coordinator_main(); });
  // Leaders load their models while rank 0 reads the manifest; the results files are opened
  // only after Start, so a job that stops before it (a bad manifest) leaves no output.
  // Group members load theirs too: they run every request of the group with the leader.
  if (leader_ || member_) worker_ = std::thread([this] { worker_main(); });
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
    if (coordinator_error_) std::rethrow_exception(coordinator_error_);
    throw Error(finish_.error.kind, finish_.error.message);
  }
  return static_cast<ExitCode>(finish_.exit_code);
}

void RankRuntime::stop_threads() noexcept {
  abandon_.store(true);
  work_.close();
  writes_.close();
  coord_inbox_.close();
  for (auto* t : {&coordinator_, &worker_, &writer_}) {
    if (t->joinable()) t->join();
  }
}

void RankRuntime::loop() {
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
    if (s_.group != nullptr) {
      while (auto env = poll_message(*s_.group)) {
        if (auto* run = std::get_if<GroupRunMsg>(&env->message)) {
          if (!member_) {
            throw RuntimeError("protocol: GroupRun at rank " + std::to_string(rank_) +
                               ", not a group member");
          }
          log_debug("group: leader runs '" + run->request.id + "': running it with the group");
          work_.push(AssignMsg{std::move(run->request), run->attempt});
          active = true;
        } else if (const auto* group_idle = std::get_if<GroupIdleMsg>(&env->message)) {
          log_debug("group: leader done with '" + group_idle->id + "'");
        }
      }
    }
    while (!finished_) {
      auto ev = local_.try_pop();
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
    if (auto ev = local_.pop_for(idle)) {
      on_local(std::move(*ev));
      idle = kMinIdle;
    } else {
      idle = std::min(idle * 2, kMaxIdle);
    }
  }
}

void RankRuntime::send(int dest, const Message& m) {
  if (dest == rank_) {
    route(Envelope{rank_, m});
  } else {
    send_message(*s_.world, dest, m);
  }
}

void RankRuntime::route(const Envelope& env) {
  if (for_coordinator(env.message)) {
    if (rank_ != 0) {
      throw RuntimeError(std::string("protocol: ") + message_name(env.message) +
                         " for the coordinator arrived at rank " + std::to_string(rank_));
    }
    coord_inbox_.push(env);
    return;
  }
  on_agent(env.message);
}

void RankRuntime::on_agent(const Message& m) {
  if (std::holds_alternative<StartMsg>(m)) {
    started_ = true;
    if (leader_) {
      writer_ = std::thread([this] { writer_main(); });
      if (loaded_) on_loaded(std::exchange(loaded_, std::nullopt).value());
    }
  } else if (const auto* assign = std::get_if<AssignMsg>(&m)) {
    if (!leader_)
      throw RuntimeError("protocol: Assign at rank " + std::to_string(rank_) +
                         ", not a replica leader");
    if (draining_ || writer_broken_) {
      send(0, ReturnedMsg{replica_, {assign->request.id}});
    } else {
      work_.push(*assign);
    }
  } else if (const auto* drain = std::get_if<DrainMsg>(&m)) {
    draining_ = true;
    if (drain->abandon) abandon_.store(true);
    if (leader_) {
      ReturnedMsg back{replica_, {}};
      for (auto& a : work_.take_all()) back.ids.push_back(a.request.id);
      log_info("drain: " + std::to_string(back.ids.size()) + " queued request(s) given back" +
               (running_id_.empty() ? std::string() : ", '" + running_id_ + "' running"));
      if (!back.ids.empty()) send(0, back);
    }
  } else if (std::holds_alternative<ShutdownMsg>(m)) {
    if (leader_ && writer_.joinable()) {
      work_.close();    // the worker is idle: every assigned request was resolved
      writes_.close();  // the writer closes the sink, then posts WriterClosed
    } else if (member_ && worker_.joinable()) {
      // Closed once the member's worker has finished its last request (WorkerExited), so
      // its busy seconds are complete.
      shutdown_seen_ = true;
      work_.close();
      if (worker_exited_) send(0, ClosedMsg{busy_s_});
    } else {
      send(0, ClosedMsg{busy_s_});
    }
  } else if (const auto* fin = std::get_if<FinishMsg>(&m)) {
    finished_ = true;
    finish_ = *fin;
  } else {
    throw RuntimeError(std::string("protocol: unexpected ") + message_name(m) + " at rank " +
                       std::to_string(rank_));
  }
}

void RankRuntime::on_local(LocalEvent ev) {
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
      next_heartbeat_ = clock_s() + config_.scheduler.heartbeat_s;
    }
  } else if (auto* started = std::get_if<WorkerStarted>(&ev)) {
    running_id_ = started->assignment.request.id;
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
    writer_broken_ = true;
    send(0, FatalMsg{failed->error});
  } else if (std::holds_alternative<WriterClosed>(ev)) {
    send(0, ClosedMsg{busy_s_});
  } else if (auto* exited = std::get_if<WorkerExited>(&ev)) {
    worker_exited_ = true;
    busy_s_ = exited->busy_s;
    if (shutdown_seen_) send(0, ClosedMsg{busy_s_});
  }
}

void RankRuntime::on_loaded(Loaded loaded) {
  if (member_) {  // a member has no results file and reports no Ready; a failed load ends the job
    if (loaded.error) send(0, FatalMsg{error_info(loaded.error)});
    return;
  }
  if (loaded.error) {
    send(0, ReadyMsg{replica_, 0, "", false, error_info(loaded.error)});
  } else {
    device_ = loaded.device;
    writes_.push(OpenCmd{device_});
  }
}

void RankRuntime::check_signals() {
  if (!s_.signal_level) return;
  const int level = s_.signal_level();
  if (level <= reported_signals_) return;
  reported_signals_ = level;
  const int sig = s_.last_signal ? s_.last_signal() : 0;
  log_warn("received drain signal " + std::to_string(sig) + " (" + std::to_string(level) +
           (level >= 2 ? "): abandoning running requests" : "): draining the job"));
  send(0, SignalMsg{level, sig});
}

void RankRuntime::check_running() {
  if (!leader_ || !ready_sent_) return;
  const double t = clock_s();
  const double timeout = config_.scheduler.request_timeout_s;
  if (timeout > 0.0 && !running_id_.empty() && t - running_since_ > timeout) {
    const std::string why = "request '" + running_id_ + "' on rank " + std::to_string(rank_) +
                            " has run for " +
                            shortest(std::round((t - running_since_) * 10.0) / 10.0) +
                            " s, longer than scheduler.request_timeout_s = " + shortest(timeout) +
                            " s; aborting the job (rerun with --resume to finish the rest)";
    log_error(why);
    s_.world->abort_job(static_cast<int>(ExitCode::interrupted), why);
  }
  if (config_.scheduler.heartbeat_s > 0.0 && t >= next_heartbeat_ && !finished_) {
    next_heartbeat_ = t + config_.scheduler.heartbeat_s;
    send(0, HeartbeatMsg{replica_, running_id_, running_id_.empty() ? 0.0 : t - running_since_,
                         busy_s_});
  }
}

// --- coordinator thread (rank 0) -------------------------------------------------------------

void RankRuntime::coordinator_main() {
  auto finish_all = [this](const FinishMsg& msg) {
    for (int r = 1; r < s_.topology.world_size; ++r) post(r, msg);
    post(0, msg);
  };
  try {
    // The workers load their models meanwhile (docs/runtime.md "Job startup").
    const fs::path dir = config_.output.dir;
    ManifestOptions mopts = job_manifest_options(config_);
    mopts.hash_cache = std::make_shared<FileHashCache>();
    const fs::path cache_file = file_hash_cache_path(dir);
    (void)mopts.hash_cache->load(cache_file);
    DoneMap done;
    if (options_.resume && fs::exists(dir) && options_.scan_done) done = options_.scan_done(dir);
    const CostModel cost(describe_model(config_.model));
    PlannedSource filtered(mopts, done, dir.string(), cost);
    const JobPlan& plan = filtered.plan();
    const std::size_t skipped = filtered.skipped();
    if (plan.to_run + skipped == 0) {  // nothing to do is a defect of the manifest (exit 2)
      throw no_requests_error(mopts, 0, plan.filtered);
    }
    log_info("coordinator: manifest read (" + std::to_string(plan.to_run + skipped) +
             " request(s), " + std::to_string(mopts.hash_cache->files_hashed()) +
             " input file(s) hashed, " +
             (filtered.all_kept() ? std::string("all to run kept in memory")
                                  : std::to_string(filtered.kept()) +
                                        " kept in memory, the rest read again later") +
             ")");
    // Saved into the output folder once the job has created it (its writers open their files
    // after Start), so a job that stops before leaves no output.
    bool cache_saved = !mopts.hash_cache->changed();
    const auto save_cache = [&] {
      std::error_code ec;
      if (cache_saved || !fs::is_directory(dir, ec)) return;
      cache_saved = true;
      try {
        mopts.hash_cache->save(cache_file);
      } catch (const Error& e) {  // a cache only: the job goes on without it
        log_warn(std::string("file hash cache not saved: ") + e.what());
      }
    };

    CoordinatorOptions co;
    co.config = config_;
    co.topology = s_.topology;
    co.plan = plan;
    co.skipped_resume = skipped;
    co.progress_out = s_.progress_out;
    co.progress_in_place = s_.progress_in_place;
    co.progress_interval_s = options_.progress_interval_s;
    co.now = options_.clock;
    std::optional<Deadline> deadline = options_.deadline;
    if (!deadline) deadline = options_.lookup_deadline ? options_.lookup_deadline() : slurm_deadline();
    if (deadline) {
      const double unix_now = options_.clock ? options_.clock() : unix_s();
      const double margin = config_.scheduler.deadline_margin_s;
      std::ostringstream line;
      line << "deadline: " << format_utc(deadline->unix_s) << " (from " << deadline->source
           << "), " << std::llround(deadline->unix_s - unix_now) << " s from now; requests are "
           << "handed out only when expected to end " << shortest(margin)
           << " s before it (scheduler.deadline_margin_s)";
      log_info(line.str());
      // In the coordinator's time base: the injected clock, else the steady clock.
      co.deadline = options_.clock ? deadline->unix_s : steady_s() + (deadline->unix_s - unix_now);
    }
    co.finalize = [this, dir, &done](const RunSummary& summary) {
      DoneMap().swap(done);  // no request is read any more: free it before the merge
      std::error_code ec;
      fs::create_directories(dir, ec);
      if (ec) throw IoError(dir.string(), "cannot create the output folder: " + ec.message());
      results::write_summary_json(dir / "summary.json", summary);
      if (options_.merge) options_.merge(dir, summary, effective_config_yaml(config_));
      std::cout << format_summary(summary) << std::flush;
    };
    Coordinator coordinator(std::move(co), filtered,
                            [this](int dest, const Message& m) { post(dest, m); });
    coordinator.start();
    while (!coordinator.finished()) {
      auto env = coord_inbox_.pop_for(200ms);
      if (env) {
        coordinator.handle(*env);
      } else if (coord_inbox_.closed()) {
        return;
      }
      coordinator.tick();
      if (coordinator.phase() != Coordinator::Phase::setup) save_cache();
    }
  } catch (...) {
    coordinator_error_ = std::current_exception();
    FinishMsg msg;
    msg.has_error = true;
    msg.error = error_info(coordinator_error_);
    msg.exit_code = static_cast<int>(Error(msg.error.kind, msg.error.message).exit_code());
    log_debug("coordinator: job stops: " + msg.error.message);
    finish_all(msg);
  }
}

// --- worker thread (replica leaders) ---------------------------------------------------------

void RankRuntime::worker_main() {
  std::unique_ptr<Pipeline> pipeline;
  std::string device;
  try {
    const DeviceBinding binding = bind_device(config_.model, config_.parallel, s_.local_rank);
    if (!options_.make_pipeline) throw RuntimeError("no pipeline factory");
    pipeline = options_.make_pipeline(binding);
    if (!pipeline) throw ModelError("the pipeline factory returned nothing");
    device = pipeline->device_name();
    local_.push(Loaded{device, nullptr});
  } catch (...) {
    local_.push(Loaded{"", std::current_exception()});
    if (member_) local_.push(WorkerExited{0.0});
    return;
  }
  double busy = 0.0;
  if (member_) {
    while (auto assignment = work_.pop()) run_as_member(*pipeline, *assignment, busy);
    local_.push(WorkerExited{busy});
    return;
  }
  const std::string numerics = numerics_profile(config_);
  while (auto assignment = work_.pop()) {
    const Request& req = assignment->request;
    ResultRecord rec;
    rec.id = req.id;
    rec.input_key = req.input_key;
    rec.rank = rank_;
    rec.replica = replica_;
    rec.host = s_.host;
    rec.device = device;
    rec.frames = req.num_frames;
    rec.height = req.height;
    rec.width = req.width;
    rec.steps = req.num_inference_steps;
    rec.attempt = assignment->attempt;
    rec.numerics = numerics;
    rec.prompt = req.prompt;
    rec.seed = req.seed;
    rec.fps = req.fps;
    if (!req.input_error.empty()) {
      rec.status = RequestStatus::failed;
      rec.error = "input error: " + req.input_error;
      rec.start_time = rec.end_time = unix_s();
      post(0, GeneratedMsg{req.id});
      writes_.push(WriteJob{std::move(rec), Video{}});
      continue;
    }
    local_.push(WorkerStarted{*assignment, clock_s()});
    const double wall0 = unix_s();
    const double t0 = clock_s();
    Video video;
    bool ok = false;
    bool transient = false;
    std::string error;
    GenerateContext ctx;
    ctx.attempt = assignment->attempt;
    ctx.abandoned = [this] { return abandon_.load(); };
    ctx.cfg = s_.axes.cfg;
    ctx.sequence = s_.axes.sequence;
    ctx.tensor = s_.axes.tensor;
    // After the second-to-last step the request is nearly done: ask for the prefetch now.
    ctx.on_step = [this, &req, pulled = false](int step, int total) mutable {
      if (!pulled && step >= total - 1) {
        pulled = true;
        local_.push(WorkerNearlyDone{req.id});
      }
    };
    try {
      video = pipeline->generate(req, ctx);
      video.check();
      if (video.frames != req.num_frames || video.height != req.height ||
          video.width != req.width) {
        throw ModelError("the pipeline returned a " + std::to_string(video.frames) + "x" +
                         std::to_string(video.height) + "x" + std::to_string(video.width) +
                         " video for a " + std::to_string(req.num_frames) + "x" +
                         std::to_string(req.height) + "x" + std::to_string(req.width) + " request");
      }
      ok = true;  // the writer hashes it, off the model's critical path
    } catch (const TransientModelError& e) {
      error = e.what();
      transient = true;
    } catch (const std::exception& e) {
      error = e.what();
      transient = looks_transient(error);
    } catch (...) {
      error = "unknown exception from the pipeline";
    }
    const double seconds = clock_s() - t0;
    busy += seconds;
    rec.start_time = wall0;
    rec.end_time = wall0 + seconds;
    rec.seconds = seconds;
    local_.push(WorkerIdle{req.id, busy});
    if (ok) {
      rec.status = RequestStatus::ok;
      post(0, GeneratedMsg{req.id});
      writes_.push(WriteJob{std::move(rec), std::move(video)});
    } else if (abandon_.load()) {
      log_warn("request '" + req.id + "' abandoned: " + error);
      post(0, ReturnedMsg{replica_, {req.id}});
    } else if (transient && assignment->attempt <= config_.scheduler.max_retries) {
      post(0, RetryMsg{req.id, replica_, assignment->attempt, error, seconds});
    } else {
      rec.status = RequestStatus::failed;
      rec.error = error;
      post(0, GeneratedMsg{req.id});
      writes_.push(WriteJob{std::move(rec), Video{}});
    }
  }
}

// A group member runs the leader's request with it (the pipeline exchanges the CFG branches
// and the sequence shards through the group's collectives, GenerateContext's axes) and keeps
// only its own busy seconds: the leader records the result. A failure here is logged; the
// leader's outcome is the request's.
void RankRuntime::run_as_member(Pipeline& pipeline, const AssignMsg& assignment, double& busy) {
  const Request& req = assignment.request;
  GenerateContext ctx;
  ctx.attempt = assignment.attempt;
  ctx.abandoned = [this] { return abandon_.load(); };
  ctx.cfg = s_.axes.cfg;
  ctx.sequence = s_.axes.sequence;
  ctx.tensor = s_.axes.tensor;
  const double t0 = clock_s();
  try {
    (void)pipeline.generate(req, ctx);
  } catch (const std::exception& e) {
    log_warn("group member: request '" + req.id + "' (attempt " +
             std::to_string(assignment.attempt) + ") failed on this rank: " + e.what());
  }
  busy += clock_s() - t0;
  local_.push(WorkerIdle{req.id, busy});
}

// --- writer thread (replica leaders) ---------------------------------------------------------

void RankRuntime::writer_main() {
  auto first = writes_.pop();
  const auto* open = first ? std::get_if<OpenCmd>(&*first) : nullptr;
  if (open == nullptr) {
    local_.push(WriterClosed{});
    return;
  }
  std::unique_ptr<ResultSink> sink;
  bool broken = false;
  try {
    if (!options_.make_sink) throw RuntimeError("no result sink factory");
    sink = options_.make_sink(SinkInfo{rank_, s_.topology.world_size, s_.host, open->device,
                                       config_.model.name, effective_config_yaml(config_)});
    local_.push(Opened{nullptr});
  } catch (...) {
    local_.push(Opened{std::current_exception()});
    broken = true;
  }
  const auto& faults = config_.faults;
  const bool kill_here =
      faults.kill_rank == rank_ && faults.kill_after > 0 && !faults.kill_in_write;
  int writes = 0;
  while (auto item = writes_.pop()) {
    auto* job = std::get_if<WriteJob>(&*item);
    if (job == nullptr) continue;
    ResultRecord& rec = job->record;
    if (broken) {
      post(0, ReturnedMsg{replica_, {rec.id}});
      continue;
    }
    try {
      const double t0 = steady_s();
      if (rec.status == RequestStatus::ok) rec.video_sha256 = video_sha256(job->video);
      const double t1 = steady_s();
      sink->write(rec, rec.status == RequestStatus::ok ? &job->video : nullptr);
      log_debug("writer: '" + rec.id + "' hashed in " + shortest(t1 - t0) + " s, written in " +
                shortest(steady_s() - t1) + " s");
    } catch (...) {
      broken = true;
      local_.push(WriterFailed{error_info(std::current_exception())});
      post(0, ReturnedMsg{replica_, {rec.id}});
      continue;
    }
    ++writes;
    if (kill_here && writes == faults.kill_after) {
      log_warn("faults.kill_rank: rank " + std::to_string(rank_) + " kills itself after " +
               std::to_string(writes) + " completions");
      std::raise(SIGKILL);
    }
    post(0, DoneMsg{rec.id, rec.status, rec.error, rec.rank, rec.replica, rec.attempt,
                    rec.start_time, rec.end_time, rec.seconds});
  }
  if (sink && !broken) {
    try {
      sink->close();
    } catch (...) {
      local_.push(WriterFailed{error_info(std::current_exception())});
    }
  }
  local_.push(WriterClosed{});
}

}  // namespace

ExitCode run_rank(const RankSetup& setup) {
  if (setup.options == nullptr || setup.world == nullptr) {
    throw RuntimeError("run_rank: options and world transport are required");
  }
  set_log_rank(setup.world->rank());
  RankRuntime runtime(setup);
  return runtime.run();
}

std::vector<RankOutcome> run_job_in_process(
    const JobOptions& options, int world_size,
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
              n, axis_group_name(name, to_string(kAxes[a]), topology.axis_ranks(ranks[0] + member, kAxes[a]))));
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
