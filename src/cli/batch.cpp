#include "omnidp/cli/batch.hpp"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "omnidp/cli/number_options.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/common/error_text.hpp"
#include "omnidp/common/file_kind.hpp"
#include "omnidp/common/log.hpp"
#include "omnidp/common/version.hpp"
#include "omnidp/config/config.hpp"
#include "omnidp/export/export_sink.hpp"
#include "omnidp/export/video_export.hpp"
#include "omnidp/manifest/file_hash_cache.hpp"
#include "omnidp/manifest/manifest.hpp"
#include "omnidp/models/model_facts.hpp"
#include "omnidp/models/model_table.hpp"
#include "omnidp/models/pipeline.hpp"
#include "omnidp/models/plugin.hpp"
#include "omnidp/models/registry/registry.hpp"
#include "omnidp/results/merge.hpp"
#include "omnidp/results/result_files.hpp"
#include "omnidp/runtime/deadline.hpp"
#include "omnidp/runtime/job.hpp"
#include "omnidp/runtime/signals.hpp"

namespace omnidp::cli {
namespace {

constexpr const char* kProgram = "omni-dp-batch";

constexpr const char* kExamples = R"(Examples:
  # the embedded tiny-wan default on the CPU, two ranks
  mpirun -np 2 omni-dp-batch --config configs/tiny.yaml
  # one node, 8 GPUs
  mpirun -np 8 omni-dp-batch --config hv15.yaml --output /scratch/$USER/hv15
  # two nodes x 4 GPUs under Slurm: a batch script that runs `mpirun omni-dp-batch ...`,
  # drains on USR1 (exit 75) and requeues itself (README.md has one)
  sbatch --nodes=2 --ntasks-per-node=4 --gpus-per-node=4 --signal=B:USR1@120 hv15.sbatch
  # check a config and a manifest without running anything
  omni-dp-batch --config hv15.yaml --manifest prompts.jsonl --validate-only --all-errors
  # what 16 ranks would do, and the merged results.h5 rebuilt from the rank files
  omni-dp-batch --config hv15.yaml --dry-run --world-size 16
  omni-dp-batch --merge-only results/hv15

  # resume a folder whose videos were made with another numerics profile (else exit 2)
  omni-dp-batch --config hv15.yaml --set model.dtype=fp32 --resume-mixed
  # re-hash the stored videos first; a damaged one is generated again
  omni-dp-batch --config hv15.yaml --verify

Exit codes: 0 all done, 1 some requests failed, 2 usage/configuration/manifest error,
75 interrupted by SIGUSR1/SIGTERM/SIGINT or the deadline (resume with the same command).
Docs: docs/cli.md, docs/configuration.md.)";

struct BatchOptions {
  std::string config_file;
  std::string manifest;
  std::string output;
  std::vector<std::string> sets;
  bool resume_flag = false;
  bool no_resume_flag = false;
  bool resume_mixed = false;
  bool verify = false;
  bool validate_only = false;
  bool all_errors = false;
  bool dry_run = false;
  int world_size = 0;
  int num_replicas = 0;  // 0: not given
  std::string merge_only;
  std::string deadline;
  bool version = false;
};

// The first of the environment variables that holds an integer, else `fallback`.
int env_int(std::initializer_list<const char*> names, int fallback) {
  for (const char* name : names) {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') continue;
    char* end = nullptr;
    const long parsed = std::strtol(value, &end, 10);
    if (end != nullptr && *end == '\0' && parsed >= 0 && parsed < (1L << 30)) {
      return static_cast<int>(parsed);
    }
  }
  return fallback;
}

// Output of this process: only the launcher's rank 0 writes to the terminal, so an error
// shared by every rank appears once. Errors and warnings are one line: control characters of
// the values they quote are escaped (one_line).
class Console {
 public:
  explicit Console(int rank) : rank_(rank) {}
  [[nodiscard]] bool speaks() const noexcept { return rank_ == 0; }
  void out(const std::string& text) const {
    if (speaks()) std::cout << text << std::flush;
  }
  void error(const std::string& message) const {
    if (speaks()) {
      print_error(message);
    } else {
      log_debug(std::string("error (printed by rank 0): ") + message);
    }
  }
  // On this rank whatever it is: the rank a job's ranks chose to report (stop_before_job).
  void print_error(const std::string& message) const {
    std::cerr << kProgram << ": error: " << one_line(message)
              << (rank_ == 0 ? std::string() : fmt::format(" (rank {})", rank_)) << '\n'
              << std::flush;
  }
  void warning(const std::string& message) const {
    if (speaks()) {
      std::cerr << kProgram << ": warning: " << one_line(message) << '\n' << std::flush;
    }
  }

 private:
  int rank_;
};

void define_options(CLI::App& app, BatchOptions& o) {
  app.footer(kExamples);
  app.add_option("--config", o.config_file,
                 "YAML configuration (default: the embedded configs/tiny.yaml)")
      ->type_name("FILE");
  app.add_option("--manifest", o.manifest,
                 "JSONL manifest; overrides input.manifest (relative to the current directory)")
      ->type_name("FILE");
  app.add_option("--output", o.output, "results folder; overrides output.dir")->type_name("DIR");
  add_integer_option(app, "--num-replicas", o.num_replicas,
                     "data-parallel replicas; overrides parallel.data_parallel_size (vLLM-Omni's "
                     "--num-replicas)",
                     1, 1 << 20);
  app.add_option("--set", o.sets,
                 "override any key: section.key=value, value in YAML (e.g. [a, b]); repeatable")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
  auto* resume = app.add_flag("--resume", o.resume_flag,
                              "skip requests already done with the same input key (default)");
  auto* no_resume = app.add_flag("--no-resume", o.no_resume_flag,
                                 "do not skip requests already done in the output folder");
  resume->excludes(no_resume);
  auto* mixed = app.add_flag("--resume-mixed", o.resume_mixed,
                             "resume even where the done requests were made with another numerics "
                             "profile (dtype, device, strict, attention, kernels); each row keeps "
                             "its own profile");
  mixed->excludes(no_resume);
  auto* verify = app.add_flag("--verify", o.verify,
                              "re-hash every stored video of the output folder first: one whose "
                              "bytes do not match its row's video_sha256 is generated again "
                              "(a plain resume skips it)");
  verify->excludes(no_resume);
  auto* validate = app.add_flag("--validate-only", o.validate_only,
                                "check the configuration and the manifest, then exit (0 or 2)");
  app.add_flag("--all-errors", o.all_errors, "with --validate-only: list every error, not the first")
      ->needs(validate);
  auto* dry_run =
      app.add_flag("--dry-run", o.dry_run,
                   "print the plan (requests, replicas, groups, cost order), run nothing");
  add_integer_option(app, "--world-size", o.world_size,
                     "ranks the --dry-run plans for (default: the launcher's world size, else 1)",
                     1, 1 << 20)
      ->needs(dry_run);
  auto* merge = app.add_option("--merge-only", o.merge_only,
                               "rebuild DIR/results.h5 from the rank files in DIR, then exit")
                    ->type_name("DIR");
  app.add_option("--deadline", o.deadline,
                 "the job's end: hand out only requests expected to finish by TIME minus "
                 "scheduler.deadline_margin_s, then drain (exit 75). TIME: 2026-12-01T12:00:00 "
                 "(local), ...Z or ...+01:00, @EPOCH, +20s/+15m/+2h. Default: Slurm's end time")
      ->type_name("TIME");
  app.add_flag("--version", o.version, "print the version and exit");
  validate->excludes(dry_run);
  merge->excludes(validate);
  merge->excludes(dry_run);
}

// config file (or the embedded default) -> --set -> --num-replicas/--manifest/--output ->
// validated.
Config effective_config(const BatchOptions& o) {
  Config config = o.config_file.empty() ? default_config() : load_config_file(o.config_file);
  apply_overrides(config, o.sets);
  if (o.num_replicas > 0) {
    apply_overrides(config, {fmt::format("parallel.data_parallel_size={}", o.num_replicas)});
  }
  if (!o.manifest.empty()) {
    config.input.manifest = std::filesystem::absolute(o.manifest).lexically_normal().string();
  }
  if (!o.output.empty()) {
    config.output.dir = std::filesystem::absolute(o.output).lexically_normal().string();
  }
  // The models this process knows: the built-in ones, then the plugin's (its names are valid).
  models::register_builtin_models();
  if (const auto plugin = plugin_path(config); !plugin.empty()) models::load_model_plugin(plugin);
  models::validate_config(config);
  models::set_process_environment(config);  // before the job's threads (model_table.hpp)
  return config;
}

// A manifest that cannot be read is a configuration error (exit 2): nothing can start.
void check_manifest_readable(const Config& config) {
  const std::filesystem::path path(config.input.manifest);
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  std::string problem;
  if (!std::filesystem::exists(status)) {
    problem = "no such file";
  } else if (std::filesystem::is_directory(status)) {
    problem = "it is a folder";
  } else if (!std::filesystem::is_regular_file(status)) {
    problem = "it " + regular_file_problem(path);  // /dev/null: not "no such file"
  } else if (!std::ifstream(path, std::ios::binary)) {
    problem = "not readable";
  }
  if (!problem.empty()) {
    throw ConfigError("input.manifest", "cannot read '" + path.string() + "': " + problem);
  }
}

int validate_only(const Config& config, bool all_errors, const Console& console) {
  check_manifest_readable(config);
  ManifestOptions options = job_manifest_options(config);
  // Unchanged inputs of an earlier run are not hashed again; nothing is written.
  options.hash_cache = std::make_shared<FileHashCache>();
  (void)options.hash_cache->load(file_hash_cache_path(config.output.dir));
  const ValidationReport report = validate_manifest(options, all_errors);
  for (const auto& error : report.errors) console.error(error.what());
  for (const auto& input_error : report.input_errors) {
    console.warning(input_error + " (the request would be recorded as failed)");
  }
  std::ostringstream summary;
  if (!report.ok()) {
    if (all_errors) {
      summary << config.input.manifest << ": " << report.errors.size() << " error"
              << (report.errors.size() == 1 ? "" : "s") << ", " << report.requests
              << " valid request" << (report.requests == 1 ? "" : "s") << "\n";
    }
    if (console.speaks()) std::cerr << summary.str() << std::flush;
    return static_cast<int>(ExitCode::usage);
  }
  summary << config.input.manifest << ": OK, " << report.requests << " requests";
  if (!report.input_errors.empty()) {
    summary << " (" << report.input_errors.size() << " with input errors)";
  }
  if (report.filtered > 0) {
    summary << ", " << report.filtered << " line(s) of other tasks skipped (input.tasks [";
    for (std::size_t i = 0; i < config.input.tasks.size(); ++i) {
      summary << (i > 0 ? ", " : "") << config.input.tasks[i];
    }
    summary << "])";
  }
  summary << "; configuration OK ("
          << (config.source_file.empty() ? "embedded tiny.yaml" : config.source_file.string())
          << ")\n";
  console.out(summary.str());
  return static_cast<int>(ExitCode::ok);
}

int dry_run(const Config& config, bool resume, bool resume_mixed, bool verify, int world_size,
            const Console& console) {
  check_manifest_readable(config);
  runtime::JobOptions options;
  options.config = config;
  options.resume = resume;
  options.resume_mixed = resume_mixed;
  options.verify = verify;
  std::ostringstream plan;
  runtime::print_plan(options, world_size, plan);
  console.out(plan.str());
  return static_cast<int>(ExitCode::ok);
}

int merge_only(const std::filesystem::path& dir, const Console& console) {
  if (!is_folder_path(dir)) {
    throw UsageError("--merge-only: '" + dir.string() + "' is not a folder");
  }
  if (!console.speaks()) return static_cast<int>(ExitCode::ok);  // one writer of results.h5
  // A job array's folder of shard folders (results/<name>/shard-NN, docs/slurm.md): each shard
  // that holds rank files is merged on its own, in name order.
  std::vector<std::filesystem::path> folders{dir};
  if (results::list_rank_files(dir).empty()) {
    std::vector<std::filesystem::path> shards;
    // Names only, then what each is, without throwing on a link loop (issue 52, class 3).
    for (auto& entry : folder_entries(dir)) {
      if (is_folder_path(entry) && !results::list_rank_files(entry).empty()) {
        shards.push_back(std::move(entry));
      }
    }
    std::sort(shards.begin(), shards.end());
    if (!shards.empty()) folders = std::move(shards);  // else merge_directory names the problem
  }
  for (const auto& folder : folders) {
    const results::MergeResult merged = results::merge_directory(folder);
    for (const auto& file : merged.unreadable_files) {
      console.warning(file + ": unreadable rank file, skipped");
    }
    if (merged.rows_without_video > 0) {
      console.warning(fmt::format(
          "{}: {} ok row(s) not merged: their stored video is missing or unreadable (a rank "
          "died between the video and its row; a rerun generates them again)",
          folder.string(), merged.rows_without_video));
    }
    console.out(fmt::format("{}: {} requests from {} rank file{} (summary: {})\n",
                            merged.path.string(), merged.rows, merged.rank_files.size(),
                            merged.rank_files.size() == 1 ? "" : "s", merged.summary_source));
  }
  if (folders.size() > 1 || folders.front() != dir) {
    console.out(fmt::format("{}: {} shard folder{} merged\n", dir.string(), folders.size(),
                            folders.size() == 1 ? "" : "s"));
  }
  return static_cast<int>(ExitCode::ok);
}

// `reported`: set once the job's error is printed (by rank 0, before MPI_Finalize).
int run(const Config& config, bool resume, bool resume_mixed, bool verify,
        std::optional<runtime::Deadline> deadline, const Console& console, bool& reported) {
  runtime::JobOptions options;
  options.report_error = [&console, &reported](const std::exception& e) {
    const auto* error = dynamic_cast<const Error*>(&e);
    console.error(error != nullptr ? std::string(e.what())
                                   : std::string("internal error: ") + e.what());
    reported = true;
  };
  options.config = config;
  options.resume = resume;
  options.resume_mixed = resume_mixed;
  options.verify = verify;
  options.deadline = std::move(deadline);
  options.make_pipeline = [config](const DeviceBinding& device) {
    return models::create_pipeline(config, device);
  };
  // The rank files, then output.export's files of each request, written on the writer thread
  // after its durable write (docs/export.md).
  video_export::check_export_support(config.output);
  options.make_sink =
      [config, rank_files = runtime::results_sink_factory(config)](const runtime::SinkInfo& info) {
        return video_export::with_export(rank_files(info), config.output);
      };
  return static_cast<int>(runtime::run_job(options));
}

// A job's ranks under a launcher: its world size (1 alone).
int launcher_world_size() { return env_int({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}, 1); }

// The modes that run no job (they need no other rank): rank 0 alone does them.
bool runs_no_job(const BatchOptions& o) {
  return o.version || o.validate_only || o.dry_run || !o.merge_only.empty();
}

// An error that stops this rank before the job: printed by rank 0 alone, else, for a job's
// ranks under a launcher (where the first rank to exit makes it stop the others, rank 0
// perhaps before it printed), by the lowest rank that stopped, once every rank has started
// (runtime::stop_before_job; the ranks that did not stop exit 2 too).
int stop(const Console& console, const std::string& message, ExitCode code, bool job_ranks) {
  if (job_ranks && launcher_world_size() > 1) {
    try {
      runtime::stop_before_job([&] { console.print_error(message); });
    } catch (const std::exception& e) {  // MPI cannot start: this rank says why it stopped
      console.print_error(message + " (and MPI could not start to coordinate: " + e.what() + ")");
    }
  } else {
    console.error(message);
  }
  return static_cast<int>(code);
}

}  // namespace

int batch_main(int argc, char** argv) {
  const int rank = env_int({"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}, 0);
  set_log_rank(rank);
  const Console console(rank);

  BatchOptions o;
  CLI::App app(
      "omni-dp-batch: generate every video of a JSONL manifest with a diffusion "
      "transformer,\ndata-parallel over MPI ranks (one rank per device).",
      kProgram);
  define_options(app, o);
  try {
    app.parse(argc, argv);
  } catch (...) {
    runtime::release_early_drain_handlers();  // no job: a drain signal ends it as by default
    try {
      throw;
    } catch (const CLI::CallForHelp&) {
      console.out(app.help());
      return static_cast<int>(ExitCode::ok);
    } catch (const CLI::CallForAllHelp&) {
      console.out(app.help("", CLI::AppFormatMode::All));
      return static_cast<int>(ExitCode::ok);
    } catch (const CLI::ParseError& e) {
      // Every rank has the same command line: all of them stop here.
      return stop(console, std::string(e.what()) + " (see --help)", ExitCode::usage, true);
    }
  }
  // Only a job drains on a signal that came before its handlers (omni-dp-batch's preinit
  // handlers count it): any other command ends on it as by default.
  if (o.version || !o.merge_only.empty() || o.validate_only || o.dry_run) {
    runtime::release_early_drain_handlers();
  }
  // The other ranks of a launcher exit at once (0): the exit code and the messages are rank
  // 0's, and no rank can exit with an error before rank 0 has printed its own.
  if (!console.speaks() && runs_no_job(o)) return static_cast<int>(ExitCode::ok);

  bool reported = false;  // by run_job's report_error hook
  try {
    if (o.version) {
      console.out(version_line() + "\n");
      return static_cast<int>(ExitCode::ok);
    }
    std::optional<runtime::Deadline> deadline;
    if (!o.deadline.empty()) {
      const double now =
          std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
      deadline =
          runtime::Deadline{runtime::parse_deadline(o.deadline, now), "--deadline " + o.deadline};
    }
    if (!o.merge_only.empty()) return merge_only(o.merge_only, console);
    const Config config = effective_config(o);
    const bool resume = !o.no_resume_flag;
    if (o.validate_only) return validate_only(config, o.all_errors, console);
    if (o.dry_run) {
      const int world_size =
          o.world_size > 0 ? o.world_size : env_int({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}, 1);
      return dry_run(config, resume, o.resume_mixed, o.verify, world_size, console);
    }
    return run(config, resume, o.resume_mixed, o.verify, std::move(deadline), console, reported);
  } catch (const Error& e) {
    if (reported) return static_cast<int>(e.exit_code());
    return stop(console, e.what(), e.exit_code(), !runs_no_job(o));
  } catch (const std::exception& e) {
    if (reported) return static_cast<int>(ExitCode::some_failed);
    return stop(console, std::string("internal error: ") + e.what(), ExitCode::some_failed,
                !runs_no_job(o));
  }
}

}  // namespace omnidp::cli
