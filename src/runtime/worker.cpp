#include "omnidp/runtime/worker.hpp"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <utility>

#include "omnidp/common/error_text.hpp"
#include "omnidp/common/log.hpp"
#include "omnidp/config/numerics.hpp"
#include "omnidp/results/attempt_log.hpp"
#include "omnidp/runtime/topology.hpp"

namespace omnidp::runtime {

bool looks_transient(const std::string& what) {
  return what.find("out of memory") != std::string::npos ||
         what.find("CUDA error: an illegal memory access") != std::string::npos;
}

void Worker::run() {
  std::unique_ptr<Pipeline> pipeline;
  std::string device;
  try {
    DeviceBinding binding = bind_device(c_.config.model, c_.config.parallel, s_.local_rank);
    if (s_.axes.tensor != nullptr) {  // this rank's shard of the transformer's weights
      binding.tensor_rank = s_.axes.tensor->rank();
      binding.tensor_size = s_.axes.tensor->size();
    }
    if (!c_.options.make_pipeline) throw RuntimeError("no pipeline factory");
    const auto start = std::chrono::steady_clock::now();
    pipeline = c_.options.make_pipeline(binding);
    if (!pipeline) throw ModelError("the pipeline factory returned nothing");
    device = device_label_with_model(binding, pipeline->device_name());
    // The load figure of docs/performance.md ("Model load"): seconds and the process's peak
    // resident host memory so far (getrusage: kilobytes on Linux).
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    log_info(fmt::format(
        "model {} loaded on {} in {:.2f} s, peak host memory {:.2f} GiB", pipeline->model_name(),
        device, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
        static_cast<double>(usage.ru_maxrss) / (1024.0 * 1024.0)));
    c_.events.push(Loaded{device, nullptr});
  } catch (...) {
    c_.events.push(Loaded{"", std::current_exception()});
    if (c_.member) c_.events.push(WorkerExited{0.0});
    return;
  }
  if (c_.member) {
    double busy = 0.0;
    while (auto assignment = c_.work.pop()) run_as_member(*pipeline, *assignment, busy);
    c_.events.push(WorkerExited{busy});
    return;
  }
  run_as_leader(*pipeline, device);
}

namespace {

// The request's model FLOPs in TFLOP, of the forwards it computed (0: not counted). A count
// that fails is logged, never the request's failure.
double model_tflop(const Pipeline& pipeline, const Request& request, const ForwardCounts& counts) {
  try {
    if (const auto flops = pipeline.flops(request)) return computed_model_tflop(*flops, counts);
  } catch (const std::exception& e) {
    log_warn("request '" + request.id + "': no model FLOP count: " + e.what());
  }
  return 0.0;
}

}  // namespace

double computed_model_tflop(const RequestFlops& flops, const ForwardCounts& counts) noexcept {
  RequestFlops done = flops;
  if (counts.forwards > 0) {
    const int computed = std::clamp(counts.computed, 0, counts.forwards);
    // Skipped forwards do no transformer GEMMs; the first block a first-block cache runs on
    // a skipped step (to decide that it may skip) is not counted either.
    done.transformer *= static_cast<double>(computed) / static_cast<double>(counts.forwards);
  }
  return done.total() / 1e12;
}

void Worker::run_as_leader(Pipeline& pipeline, const std::string& device) {
  double busy = 0.0;
  const std::string numerics = numerics_profile(c_.config);  // the rows without a line cache
  // The attempt log (JobOptions::count_attempts), opened at the first attempt: the output
  // folder exists once work is handed out. A log that cannot be written is one warning; the
  // count is a safety net, the request goes on.
  std::unique_ptr<results::AttemptLog> attempts;
  bool attempts_broken = !c_.options.count_attempts || c_.config.output.dir.empty();
  const auto log_attempt = [&](const AssignMsg& a, bool start) {
    if (attempts_broken) return;
    try {
      if (!attempts) {
        attempts = std::make_unique<results::AttemptLog>(c_.config.output.dir, c_.rank);
        attempts->make_current();  // the signal handlers' and the timeout's notes go here
        if (s_.signal_level && s_.signal_level() > 0) {
          attempts->signalled(s_.last_signal ? s_.last_signal() : 0);
        }
      }
      if (start) {
        attempts->started(a.request.id, a.request.input_key, a.attempt);
      } else {
        attempts->ended(a.request.id, a.request.input_key, a.attempt);
      }
    } catch (const std::exception& e) {
      attempts_broken = true;
      log_warn(std::string("attempts are not counted across runs: ") + e.what());
    }
  };
  while (auto assignment = c_.work.pop()) {
    const Request& req = assignment->request;
    ResultRecord rec;
    rec.id = req.id;
    rec.input_key = req.input_key;
    rec.rank = c_.rank;
    rec.replica = c_.replica;
    rec.host = s_.host;
    rec.device = device;
    rec.frames = req.num_frames;
    rec.height = req.height;
    rec.width = req.width;
    rec.steps = req.num_inference_steps;
    rec.attempt = assignment->attempt;
    rec.numerics = req.cache || !req.lora.empty() ? numerics_profile(c_.config, req.cache, req.lora)
                                                  : numerics;
    rec.prompt = req.prompt;
    rec.seed = req.seed;
    rec.fps = req.fps;
    if (!req.input_error.empty() || !req.refused.empty()) {
      rec.status = RequestStatus::failed;
      rec.error = req.input_error.empty() ? req.refused : "input error: " + req.input_error;
      rec.start_time = rec.end_time = unix_s();
      c_.post(0, GeneratedMsg{req.id});
      c_.writes.push(WriteJob{std::move(rec), Video{}});
      continue;
    }
    c_.events.push(WorkerStarted{*assignment, c_.clock_s()});
    const double wall0 = unix_s();
    const double t0 = c_.clock_s();
    Video video;
    bool ok = false;
    bool transient = false;
    std::string error;
    GenerateContext ctx;
    ctx.attempt = assignment->attempt;
    ctx.abandoned = [this] { return c_.abandon.load(); };
    ctx.cfg = s_.axes.cfg;
    ctx.sequence = s_.axes.sequence;
    ctx.tensor = s_.axes.tensor;
    // The request's transformer forwards, reported once by a successful generate().
    ForwardCounts forwards;
    ctx.on_forwards = [&forwards](const ForwardCounts& counts) { forwards = counts; };
    // After the second-to-last step the request is nearly done: ask for the prefetch now.
    ctx.on_step = [this, &req, pulled = false](int step, int total) mutable {
      if (!pulled && step >= total - 1) {
        pulled = true;
        c_.events.push(WorkerNearlyDone{req.id});
      }
    };
    log_attempt(*assignment, true);
    try {
      video = pipeline.generate(req, ctx);
      video.check();
      if (video.frames != req.num_frames || video.height != req.height || video.width != req.width) {
        throw ModelError(fmt::format(
            "the pipeline returned a {}x{}x{} video for a {}x{}x{} request", video.frames,
            video.height, video.width, req.num_frames, req.height, req.width));
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
    log_attempt(*assignment, false);
    const double seconds = c_.clock_s() - t0;
    busy += seconds;
    rec.start_time = wall0;
    rec.end_time = wall0 + seconds;
    rec.seconds = seconds;
    c_.events.push(WorkerIdle{req.id, busy});
    if (ok) {
      rec.status = RequestStatus::ok;
      if (forwards.forwards > 0) {  // else not recorded (0, 0)
        rec.forwards = forwards.forwards;
        rec.forwards_computed = std::clamp(forwards.computed, 0, forwards.forwards);
      }
      rec.model_tflop = model_tflop(pipeline, req, forwards);
      c_.post(0, GeneratedMsg{req.id});
      c_.writes.push(WriteJob{std::move(rec), std::move(video)});
    } else if (c_.abandon.load()) {
      log_warn("request '" + req.id + "' abandoned: " + error);
      c_.post(0, ReturnedMsg{c_.replica, {req.id}});
    } else if (transient && assignment->attempt <= c_.config.scheduler.max_retries) {
      c_.post(0, RetryMsg{req.id, c_.replica, assignment->attempt, error, seconds});
    } else {
      rec.status = RequestStatus::failed;
      // The row stores the message; a library's backtrace (c10::Error: 30 frames) goes to the
      // log only.
      if (has_backtrace(error)) {
        log_warn("request '" + req.id + "' (attempt " + std::to_string(assignment->attempt) +
                 ") failed; the error with its backtrace: " + error);
      }
      rec.error = without_backtrace(error);
      c_.post(0, GeneratedMsg{req.id});
      c_.writes.push(WriteJob{std::move(rec), Video{}});
    }
  }
}

// A group member runs the leader's request with it (the pipeline exchanges the CFG branches
// and the sequence shards through the group's collectives, GenerateContext's axes) and keeps
// only its own busy seconds: the leader records the result. A failure here is logged; the
// leader's outcome is the request's.
void Worker::run_as_member(Pipeline& pipeline, const AssignMsg& assignment, double& busy) {
  const Request& req = assignment.request;
  GenerateContext ctx;
  ctx.attempt = assignment.attempt;
  ctx.abandoned = [this] { return c_.abandon.load(); };
  ctx.cfg = s_.axes.cfg;
  ctx.sequence = s_.axes.sequence;
  ctx.tensor = s_.axes.tensor;
  const double t0 = c_.clock_s();
  try {
    (void)pipeline.generate(req, ctx);
  } catch (const std::exception& e) {
    log_warn(fmt::format("group member: request '{}' (attempt {}) failed on this rank: {}", req.id,
                         assignment.attempt, e.what()));
  }
  busy += c_.clock_s() - t0;
  c_.events.push(WorkerIdle{req.id, busy});
}

}  // namespace omnidp::runtime
