#include "omnidp/runtime/job.hpp"

#include <fmt/format.h>
#include <csignal>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "omnidp/common/format.hpp"
#include "omnidp/common/log.hpp"
#include "omnidp/config/numerics.hpp"
#include "omnidp/manifest/file_hash_cache.hpp"
#include "omnidp/manifest/manifest.hpp"
#include "omnidp/models/cost.hpp"
#include "omnidp/models/model_facts.hpp"
#include "omnidp/models/request_plan.hpp"
#include "omnidp/results/merge.hpp"
#include "omnidp/results/rank_writer.hpp"
#include "omnidp/results/resume.hpp"
#include "omnidp/runtime/collective_mpi.hpp"
#include "omnidp/runtime/collective_nccl.hpp"
#include "omnidp/runtime/faults.hpp"
#include "omnidp/runtime/mpi.hpp"
#include "omnidp/runtime/plan.hpp"
#include "omnidp/runtime/rank.hpp"
#include "omnidp/runtime/shared_dir.hpp"
#include "omnidp/runtime/signals.hpp"

namespace omnidp::runtime {
namespace {

namespace fs = std::filesystem;

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

// The HDF5 results unless the caller substituted its own hooks.
JobOptions with_default_hooks(const JobOptions& in) {
  JobOptions o = in;
  if (!o.make_sink) o.make_sink = results_sink_factory(o.config);
  if (!o.scan_done) {
    o.scan_done = [profile = numerics_profile(o.config), mixed = o.resume_mixed,
                   verify = o.verify](const fs::path& dir) {
      results::ResumeScan scan = results::scan_folder(dir, 10.0, verify);
      for (const auto& warning : results::check_resume_profiles(scan, dir, profile, mixed)) {
        log_warn(warning);
      }
      return std::move(scan.done);
    };
  }
  o.count_attempts = true;  // the attempt logs of output.dir (results/attempt_log.hpp)
  if (!o.merge) {
    o.merge = [](const fs::path& dir, const RunSummary& summary, const std::string& yaml) {
      (void)results::merge_directory(dir, &summary, yaml);
    };
  }
  return o;
}

// The replica group's collectives on each of its axes (cfg, sequence, tensor; docs/runtime.md,
// "Collectives"): every rank of the world calls this together, since the splits and the device
// exchange are world collectives. An axis of size 1 has none. The backend follows
// parallel.collective_backend (choose_collective_backend), one choice per replica group for all
// its axes; the devices of every rank are gathered over the world, so a bad choice is the same
// ConfigError on every rank.
struct GroupCollectives {
  std::vector<Communicator> comms;  // the NCCL backend's bootstrap communicators, kept alive
  std::unique_ptr<Collective> cfg, sequence, tensor;
  [[nodiscard]] GroupAxes axes() const { return {cfg.get(), sequence.get(), tensor.get()}; }
};
GroupCollectives make_group_collectives(const Communicator& world, const Topology& topology,
                                        const Config& config, int local_rank,
                                        const std::string& host) {
  GroupCollectives out;
  if (topology.group_size == 1) return out;
  const int rank = world.rank();
  // (host hash, device) of every rank: -1 for the CPU.
  DeviceBinding device;  // a rank that does no work has none (CPU)
  if (topology.works(rank)) device = bind_device(config.model, config.parallel, local_rank);
  const std::int64_t mine[2] = {static_cast<std::int64_t>(std::hash<std::string>{}(host) >> 1),
                                device.kind == DeviceKind::cuda ? device.index : -1};
  std::vector<std::int64_t> all(static_cast<std::size_t>(2 * topology.world_size));
  mpi_check(MPI_Allgather(mine, 2, MPI_INT64_T, all.data(), 2, MPI_INT64_T, world.get()),
            "MPI_Allgather of the devices (collective backend)");
  std::vector<CollectiveBackend> backend(static_cast<std::size_t>(topology.replicas));
  for (int k = 0; k < topology.replicas; ++k) {
    const auto ranks = topology.group_ranks(k);
    bool cuda = true;
    bool distinct = true;
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      const auto a = static_cast<std::size_t>(2 * ranks[i]);
      cuda = cuda && all[a + 1] >= 0;
      for (std::size_t j = 0; j < i; ++j) {
        const auto b = static_cast<std::size_t>(2 * ranks[j]);
        if (all[a] == all[b] && all[a + 1] == all[b + 1]) distinct = false;
      }
    }
    backend[static_cast<std::size_t>(k)] =
        choose_collective_backend(config.parallel.collective_backend, cuda, distinct, nccl_built(),
                                  replica_group_name(k, ranks));
  }
  const int replica = topology.replica(rank);
  const std::string name =
      replica < 0 ? std::string() : replica_group_name(replica, topology.group_ranks(replica));
  for (const GroupAxis axis : {GroupAxis::cfg, GroupAxis::sequence, GroupAxis::tensor}) {
    const int n = topology.axis_size(axis);
    if (n == 1) continue;
    // Colors unique over the world: replica k's sub-groups are k * (G / n) + color.
    const int color = replica < 0 ? -1
                                  : replica * (topology.group_size / n) +
                                        topology.axis_color(topology.group_rank(rank), axis);
    Communicator comm = world.split(color, rank);
    if (replica < 0) continue;
    const std::string axis_name =
        axis_group_name(name, to_string(axis), topology.axis_ranks(rank, axis));
    std::unique_ptr<Collective> c;
    if (backend[static_cast<std::size_t>(replica)] == CollectiveBackend::nccl) {
      c = make_nccl_collective(comm, axis_name, device.index);
      out.comms.push_back(std::move(comm));
    } else {
      c = std::make_unique<MpiCollective>(std::move(comm), axis_name);
    }
    if (topology.is_leader(rank)) log_info(axis_name + ": collectives over " + c->backend());
    (axis == GroupAxis::cfg        ? out.cfg
     : axis == GroupAxis::sequence ? out.sequence
                                   : out.tensor) = std::move(c);
  }
  return out;
}

std::string gcost(double cost) { return fmt::format("{:.4g}", cost / 1e9); }

// The lowest rank that stopped before its job (`stopped` on this rank), or the world size when
// none did: one MPI_Allreduce, the first collective of every rank of a job.
int first_stopped_rank(const Communicator& world, bool stopped) {
  int first = stopped ? world.rank() : world.size();
  mpi_check(MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, world.get()),
            "MPI_Allreduce (the ranks that stopped before the job)");
  return first;
}

}  // namespace

void stop_before_job(const std::function<void()>& report) {
  const MpiEnvironment env(MPI_THREAD_FUNNELED);
  const Communicator world = Communicator::world();
  if (first_stopped_rank(world, true) == world.rank()) report();
  // env's MPI_Finalize: no rank leaves it before the reporting rank has reached it.
}

SinkFactory results_sink_factory(const Config& config) {
  return [config](const SinkInfo& info) -> std::unique_ptr<ResultSink> {
    auto writer = std::make_unique<results::RankWriter>(
        config.output.dir,
        results::RankFileInfo{info.rank, info.world_size, info.host, info.device, info.model,
                              info.config_yaml},
        config.output);
    if (auto hook = kill_in_write_hook(config.faults, info.rank)) {
      writer->set_fault_hook(std::move(hook));
    }
    return writer;
  };
}

ExitCode run_job(const JobOptions& options) {
  const JobOptions opts = with_default_hooks(options);
  // The drain handlers first, on the main thread: a launcher's signal during MPI_Init and the
  // setup below drains the job instead of killing the rank (the threads MPI starts inherit the
  // unblocked mask; the handlers only count).
  const DrainSignals signals;
  if (opts.config.faults.signal_at_start) std::raise(SIGUSR1);
  // Replica groups that compute call their collectives from the worker threads.
  const auto& par = opts.config.parallel;
  const bool groups =
      par.tensor_parallel_size * par.sequence_parallel_size * par.cfg_parallel_size > 1;
  MpiEnvironment env(groups ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED);
  const Communicator world = Communicator::world();
  const int rank = world.rank();
  const int size = world.size();
  set_log_rank(rank);
  // An error that stops the job is reported before env's MPI_Finalize: the launcher cannot
  // stop this rank (another one exited first) before it has printed it (issue 52, class 15).
  try {
    // A rank that stopped before its run_job (stop_before_job) joins this first collective.
    if (const int stopped = first_stopped_rank(world, false); stopped < size) {
      log_debug(fmt::format("rank {} stopped before the job (it prints why): exit 2", stopped));
      return ExitCode::usage;
    }
    // Checks every rank makes alike, so they all stop with the same error (exit 2).
    const Topology topology = make_topology(opts.config.parallel, size);
    results::check_output_support(opts.config.output);

    const Communicator node = world.split_shared();
    const Communicator group =
        world.split(topology.group_size > 1 ? topology.replica(rank) : -1, rank);
    MpiTransport world_transport(world);
    const std::string host = host_name();
    // Before any work: a node-local output folder stops the job here (exit 2).
    if (!opts.config.output.dir.empty()) {
      check_shared_output_dir(world_transport, opts.config.output.dir, host);
    }
    std::optional<MpiTransport> group_transport;
    if (!group.null()) group_transport.emplace(group);
    const GroupCollectives collectives =
        make_group_collectives(world, topology, opts.config, node.rank(), host);

    if (rank == 0) {
      std::cout << "# omni-dp effective configuration (" << size << " rank(s))\n"
                << effective_config_yaml(opts.config) << std::flush;
    }
    RankSetup setup;
    setup.options = &opts;
    setup.world = &world_transport;
    setup.group = group_transport ? &*group_transport : nullptr;
    setup.axes = collectives.axes();
    setup.topology = topology;
    setup.local_rank = node.rank();
    setup.host = host;
    setup.signal_level = [] { return DrainSignals::count(); };
    setup.last_signal = [] { return DrainSignals::last(); };
    setup.progress_out = stderr;
    setup.progress_in_place = isatty(fileno(stderr)) != 0;
    return run_rank(setup);
  } catch (const std::exception& e) {
    if (opts.report_error) opts.report_error(e);
    throw;
  }
}

void print_plan(const JobOptions& options, int world_size, std::ostream& out) {
  const JobOptions opts = with_default_hooks(options);
  const Config& c = opts.config;
  const Topology t = make_topology(c.parallel, world_size);
  const ModelInfo info = describe_model(c.model);
  const fs::path dir = c.output.dir;
  const GenerationDefaults defaults = resolve_generation_defaults(c);

  // The first requests to run in manifest order, with where their values came from, and the
  // sizes of all i2v requests (the pre-start pass shows them to the listing below).
  constexpr std::size_t kListed = 20;
  std::vector<std::string> listed;
  std::size_t unlisted = 0;
  std::map<std::pair<int, int>, std::size_t> i2v_sizes;
  const auto observe = [&](const Request& q) {
    if (q.task == Task::i2v && q.input_error.empty()) ++i2v_sizes[{q.height, q.width}];
    if (listed.size() == kListed) {
      ++unlisted;
      return;
    }
    const std::string here = fmt::format("manifest line {}", q.line);
    std::ostringstream l;
    l << "  line " << q.line << " " << q.id << ": " << to_string(q.task) << " ";
    if (!q.input_error.empty()) {
      l << "input error, recorded failed without running";
      listed.push_back(l.str());
      return;
    }
    l << q.height << " x " << q.width << " (";
    if (q.line_sets_size) {
      l << here;
    } else if (q.task == Task::i2v && info.image_size_target > 0) {
      l << "bucket of the " << q.image_width << "x" << q.image_height << " image at target_size "
        << info.image_size_target;
    } else if (q.task == Task::i2v && info.image_size_from_area) {
      l << "the " << q.image_width << "x" << q.image_height
        << " image's aspect at the area of generation.height x width";
    } else {
      l << "generation.height/width";
    }
    l << "), guidance_scale " << shortest(q.guidance_scale) << " ("
      << (q.line_sets_guidance_scale ? here : defaults.guidance_scale.origin) << "), flow_shift "
      << shortest(q.flow_shift) << " ("
      << (q.line_sets_flow_shift ? here : defaults.flow_shift.origin) << ")";
    if (q.cache) l << ", cache " << describe_cache(*q.cache) << " (" << here << ")";
    listed.push_back(l.str());
  };
  // The coordinator's plan (nothing to do stops the run, exit 2, the same way); the file hash
  // cache is read, never written by a dry run.
  JobInputs inputs(c, opts.resume, opts.scan_done, observe, opts.count_attempts);
  const ManifestOptions& mopts = inputs.manifest();
  const CostModel& cost = inputs.cost();
  PlannedSource& filtered = inputs.source();
  const JobPlan plan = filtered.plan();
  const std::size_t skipped = filtered.skipped();

  out << "omni-dp dry run: " << world_size << " rank(s), model " << c.model.name << " ("
      << to_string(c.model.dtype) << ", " << to_string(c.model.device) << ")\n";
  out << "manifest: " << mopts.path.string() << ": " << plan.to_run + skipped << " request(s)";
  if (plan.filtered > 0) {
    out << ", " << plan.filtered << " line(s) of other tasks skipped (input.tasks [";
    for (std::size_t i = 0; i < c.input.tasks.size(); ++i)
      out << (i > 0 ? ", " : "") << c.input.tasks[i];
    out << "])";
  }
  if (skipped > 0) out << ", " << skipped << " already done in " << dir.string() << " (resume)";
  out << ", " << plan.to_run << " to run";
  if (plan.input_errors > 0)
    out << " (" << plan.input_errors << " with input errors: recorded failed)";
  out << "\noutput: " << dir.string() << "\n";

  out << "replicas: " << t.replicas << " of " << t.group_size << " rank(s) (tensor_parallel "
      << c.parallel.tensor_parallel_size << " x sequence_parallel "
      << c.parallel.sequence_parallel_size << " x cfg_parallel " << c.parallel.cfg_parallel_size
      << "); coordinator on rank 0" << (t.coordinator_works ? " also works" : " only coordinates")
      << "\n";
  constexpr int kMaxListed = 16;
  for (int k = 0; k < std::min(t.replicas, kMaxListed); ++k) {
    const auto ranks = t.group_ranks(k);
    out << "  replica " << k << ": rank" << (ranks.size() > 1 ? "s " : " ");
    for (std::size_t i = 0; i < ranks.size(); ++i) out << (i > 0 ? "," : "") << ranks[i];
    out << " (";
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      out << (i > 0 ? "; " : "") << "rank " << ranks[i] << " " << t.role(ranks[i]);
    }
    out << ")\n";
  }
  if (t.replicas > kMaxListed) out << "  ... " << t.replicas - kMaxListed << " more\n";
  out << "devices by local rank:";
  const int local_ranks = c.parallel.devices.empty()
                              ? world_size
                              : std::min(world_size, static_cast<int>(c.parallel.devices.size()));
  for (int l = 0; l < std::min(local_ranks, kMaxListed); ++l) {
    out << " " << l << "=" << bind_device(c.model, c.parallel, l).name;
  }
  out << "\n";
  // The peak the MFU figures divide by (docs/performance.md, "MFU").
  if (c.runtime.peak_tflops) {
    out << "MFU peak: " << shortest(*c.runtime.peak_tflops)
        << " TFLOP/s per GPU (runtime.peak_tflops)\n";
  } else if (c.model.device == DeviceKind::cuda) {
    out << "MFU peak: the device table by each GPU's CUDA name (no MFU for a GPU not in it; "
           "runtime.peak_tflops sets one)\n";
  } else {
    out << "MFU peak: none on the CPU (MFU not reported; runtime.peak_tflops sets one)\n";
  }

  const auto& s = c.scheduler;
  out << "scheduler: " << to_string(s.policy) << ", order " << to_string(s.order) << ", prefetch "
      << s.prefetch << ", lookahead " << s.lookahead << ", max_retries " << s.max_retries
      << ", request_timeout_s " << s.request_timeout_s << "\n";
  if (info.image_size_target > 0) {
    out << "i2v size: each image's aspect-ratio bucket at target_size "
        << info.image_size_target << " (the model's choice) unless its line sets height/width; the sizes below are resolved\n";
  } else if (info.image_size_from_area) {
    out << "i2v size: each image's aspect ratio at the area of generation.height x width, sides "
           "multiples of "
        << info.size_multiple() << " (diffusers' max_area) unless its line sets height/width; the sizes below are resolved\n";
  }
  out << "generation defaults: " << describe_generation_defaults(defaults) << "\n";
  const double lower = std::max(plan.total_cost / t.replicas, plan.max_cost);
  out << "estimated cost (Gcost = 1e9 units): total " << gcost(plan.total_cost) << ", largest "
      << gcost(plan.max_cost) << ", makespan lower bound max(total/" << t.replicas
      << ", largest) = " << gcost(lower);
  if (c.model.name == "synthetic" && c.synthetic.seconds_per_gcost > 0.0) {
    out << fmt::format(" (synthetic: {:.1f} s)", lower / 1e9 * c.synthetic.seconds_per_gcost);
  }
  out << "\n";

  // The first requests in the order the coordinator hands them out.
  WorkQueue queue(s, t.replicas, filtered, cost);
  constexpr std::size_t kFirst = 20;
  const bool rr = s.policy == SchedulerPolicy::round_robin;
  out << "first requests in service order" << (rr ? "" : " (replica chosen at run time)") << ":\n";
  out << "  #    id                        frames  height x width  steps  cfg  Gcost    replica\n";
  std::size_t shown = 0;
  int misses = 0;
  for (int r = 0; shown < std::min(kFirst, plan.to_run) && misses < t.replicas;
       r = (r + 1) % t.replicas) {
    auto item = queue.next_for(rr ? r : 0);
    if (!item) {
      ++misses;
      continue;
    }
    misses = 0;
    const Request& q = item->request;
    std::string id = q.id.size() > 24 ? q.id.substr(0, 21) + "..." : q.id;
    char line[256];
    std::snprintf(line, sizeof line, "  %-4zu %-25s %6d  %6d x %-5d  %5d  %3s  %-8s %s\n", shown,
                  id.c_str(), q.num_frames, q.height, q.width, q.num_inference_steps,
                  models::plan_request(models::plan_rules(info), q).guided_steps() > 0 ? "x2" : "x1",
                  gcost(cost.prior(item->features)).c_str(), rr ? std::to_string(r).c_str() : "-");
    out << line;
    ++shown;
  }

  out << "requests in manifest order: size, guidance_scale, flow_shift (where each came from):\n";
  for (const auto& l : listed) out << l << "\n";
  if (unlisted > 0) out << "  ... " << unlisted << " more\n";
  if (!i2v_sizes.empty()) {
    out << "i2v sizes:";
    bool first = true;
    for (const auto& [size, n] : i2v_sizes) {
      out << (first ? " " : ", ") << size.first << " x " << size.second << " (" << n << ")";
      first = false;
    }
    out << "\n";
  }
}

}  // namespace omnidp::runtime
