#include "omnidp/runtime/coordinator_actor.hpp"

#include <fmt/format.h>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <optional>
#include <system_error>

#include "omnidp/common/log.hpp"
#include "omnidp/models/model_facts.hpp"
#include "omnidp/results/file_locking.hpp"
#include "omnidp/results/summary.hpp"
#include "omnidp/runtime/coordinator.hpp"
#include "omnidp/runtime/folder_lock.hpp"
#include "omnidp/runtime/plan.hpp"

namespace omnidp::runtime {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

void CoordinatorActor::run() {
  try {
    coordinate();
  } catch (...) {
    error_ = std::current_exception();
    FinishMsg msg;
    msg.has_error = true;
    msg.error = error_info(error_);
    msg.exit_code = static_cast<int>(Error(msg.error.kind, msg.error.message).exit_code());
    log_debug("coordinator: job stops: " + msg.error.message);
    for (int r = 1; r < c_.setup.topology.world_size; ++r) c_.post(r, msg);
    c_.post(0, msg);
  }
}

void CoordinatorActor::coordinate() {
  const Config& config = c_.config;
  const JobOptions& options = c_.options;
  // The workers load their models meanwhile (docs/runtime.md "Job startup").
  const fs::path dir = config.output.dir;
  // The folder's job lock before the folder is read or any work handed out (folder_lock.hpp):
  // a folder that exists now is locked before the resume scan; a new one once the manifest
  // has been read (a bad manifest leaves no folder).
  std::optional<OutputFolderLock> lock;
  const auto take_lock = [&] {
    if (!dir.empty()) lock.emplace(dir, c_.setup.host, results::file_locking_enabled());
  };
  std::error_code exists_ec;
  if (fs::is_directory(dir, exists_ec)) take_lock();
  JobInputs inputs(config, options.resume, options.scan_done, {}, options.count_attempts);
  if (!lock) take_lock();
  const JobPlan& plan = inputs.plan();
  const std::size_t skipped = inputs.skipped();
  const PlannedSource& filtered = inputs.source();
  log_info(fmt::format(
      "coordinator: manifest read ({} request(s), {} input file(s) hashed, {})",
      plan.to_run + skipped, inputs.manifest().hash_cache->files_hashed(),
      (filtered.all_kept()
           ? std::string("all to run kept in memory")
           : fmt::format("{} kept in memory, the rest read again later", filtered.kept()))));

  CoordinatorOptions co;
  co.config = config;
  co.topology = c_.setup.topology;
  co.plan = plan;
  co.skipped_resume = skipped;
  co.progress_out = c_.setup.progress_out;
  co.progress_in_place = c_.setup.progress_in_place;
  co.progress_interval_s = options.progress_interval_s;
  co.now = options.clock;
  std::optional<Deadline> deadline = options.deadline;
  if (!deadline) deadline = options.lookup_deadline ? options.lookup_deadline() : slurm_deadline();
  if (deadline) {
    const double unix_now = options.clock ? options.clock() : unix_s();
    const double margin = config.scheduler.deadline_margin_s;
    log_info(fmt::format(
        "deadline: {} (from {}), {} s from now; requests are handed out only when expected to end "
        "{:g} s before it (scheduler.deadline_margin_s)",
        format_utc(deadline->unix_s), deadline->source, std::llround(deadline->unix_s - unix_now),
        margin));
    // In the coordinator's time base: the injected clock, else the steady clock.
    co.deadline = options.clock ? deadline->unix_s : steady_s() + (deadline->unix_s - unix_now);
  }
  co.finalize = [&options, &config, dir, &inputs, &lock](const RunSummary& summary) {
    inputs.release_done();           // no request is read any more: free it before the merge
    if (lock) lock->check_folder();  // not "no rank-*.h5 files to merge"
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw IoError(dir.string(), "cannot create the output folder: " + ec.message());
    if (options.merge) options.merge(dir, summary, effective_config_yaml(config));
    // Every rank has closed its files: a live table still here was left by a killed run (its
    // readers ignore it: no writer holds its rank file); it goes now (issue 52, class 8).
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.starts_with("rank-") && name.ends_with(".h5.live")) {
        std::error_code ignored;
        fs::remove(entry.path(), ignored);
      }
    }
    // Last, once nothing can fail the job any more: a fresh summary.json is the job's verdict
    // for a launcher that loses the ranks' exit code (jobs/omnidp-job.sh after a TERM).
    results::write_summary_json(dir / "summary.json", summary);
    std::cout << format_summary(summary) << std::flush;
  };
  co.on_drain = [dir](const RunSummary& summary) {
    if (dir.empty()) return;
    results::write_summary_json(dir / "summary.json", summary);  // the folder exists (its lock)
  };
  Coordinator coordinator(std::move(co), inputs.source(),
                          [this](int dest, const Message& m) { c_.post(dest, m); });
  coordinator.start();
  auto next_folder_check = std::chrono::steady_clock::now();
  while (!coordinator.finished()) {
    // A folder removed or renamed under the job: stop now, not after generating everything.
    if (lock && std::chrono::steady_clock::now() >= next_folder_check) {
      next_folder_check = std::chrono::steady_clock::now() + 1s;
      if (!lock->folder_is_there()) {
        log_error("coordinator: the output folder " + dir.string() +
                  " was removed or renamed during the run; stopping the job");
        lock->check_folder();
      }
    }
    auto env = inbox_.pop_for(200ms);
    if (env) {
      coordinator.handle(*env);
    } else if (inbox_.closed()) {
      return;
    }
    coordinator.tick();
    if (!coordinator.abort_reason().empty()) {
      // The silent rank would never take a Finish, and MPI_Finalize would wait for it.
      log_error(coordinator.abort_reason());
      c_.setup.world->abort_job(static_cast<int>(ExitCode::interrupted), coordinator.abort_reason());
    }
    // Saved into the output folder once the job has created it (its writers open their files
    // after Start), so a job that stops before leaves no output.
    if (coordinator.phase() != Coordinator::Phase::setup) inputs.save_hash_cache();
  }
}

}  // namespace omnidp::runtime
