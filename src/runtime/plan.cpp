#include "omnidp/runtime/plan.hpp"

#include <algorithm>
#include <system_error>

#include "omnidp/common/file_kind.hpp"
#include "omnidp/common/log.hpp"
#include "omnidp/manifest/file_hash_cache.hpp"
#include "omnidp/models/model_facts.hpp"
#include "omnidp/models/pipeline.hpp"

namespace omnidp::runtime {

void AttemptRule::apply(Request& request) const {
  if (attempts == nullptr || !request.input_error.empty()) return;
  const auto it = attempts->find(results::attempt_key(request.id, request.input_key));
  if (it == attempts->end()) return;
  request.prior_attempts = it->second.last_attempt;
  if (it->second.interrupted > max_retries) {
    request.refused =
        "not run again: " + std::to_string(it->second.interrupted) +
        " attempt(s) of this request (counted across runs) were interrupted before they ended "
        "(its own rank was killed, crashed, lost its node or aborted the job by "
        "scheduler.request_timeout_s while it ran; attempts cut short because the job was "
        "stopped from elsewhere do not count), more than scheduler.max_retries = " +
        std::to_string(max_retries) + "; raise scheduler.max_retries to try it again";
  }
}

ResumeSource::ResumeSource(RequestSource& inner, const DoneMap& done, std::string manifest_file,
                           std::string output_dir, AttemptRule attempts)
    : inner_(inner),
      done_(done),
      manifest_file_(std::move(manifest_file)),
      output_dir_(std::move(output_dir)),
      attempts_(attempts) {}

std::optional<Request> ResumeSource::next() {
  while (auto request = inner_.next()) {
    const auto it = done_.find(request->id);
    if (it == done_.end()) {
      attempts_.apply(*request);
      return request;
    }
    if (it->second == request->input_key) {
      ++skipped_;
      continue;
    }
    const std::string now = request->input_key.empty()
                                ? "none (input error: " + request->input_error + ")"
                                : request->input_key;
    throw ManifestError(manifest_file_, request->line, "id",
                        "request '" + request->id + "' is already done in " + output_dir_ +
                            " with input key " + it->second +
                            ", but the manifest now gives input key " + now +
                            " (the request, the model or its weights changed): use a new "
                            "output.dir, or --no-resume to run it again");
  }
  return std::nullopt;
}

namespace {

void add_to_plan(JobPlan& plan, const Request& request, const CostModel& cost) {
  ++plan.to_run;
  if (!request.input_error.empty() || !request.refused.empty()) {
    ++plan.input_errors;
    return;
  }
  const CostFeatures f = cost.features(request);
  plan.total_features.quadratic += f.quadratic;
  plan.total_features.linear += f.linear;
  const double c = cost.prior(f);
  plan.total_cost += c;
  plan.max_cost = std::max(plan.max_cost, c);
}

}  // namespace

JobPlan scan_plan(RequestSource& source, const CostModel& cost) {
  JobPlan plan;
  while (auto request = source.next()) add_to_plan(plan, *request, cost);
  return plan;
}

std::size_t request_bytes(const Request& r) noexcept {
  constexpr std::size_t kInline = 15;    // libstdc++'s short-string buffer
  constexpr std::size_t kOverhead = 16;  // an allocation's bookkeeping
  std::size_t n = sizeof(Request);
  for (const std::string* s : {&r.id, &r.prompt, &r.negative_prompt, &r.image, &r.image_sha256,
                               &r.last_image, &r.last_image_sha256, &r.prompt_embeds,
                               &r.prompt_embeds_sha256, &r.input_key, &r.input_error, &r.refused}) {
    if (s->capacity() > kInline) n += s->capacity() + 1 + kOverhead;
  }
  return n;
}

PlannedSource::PlannedSource(ManifestOptions options, const DoneMap& done, std::string output_dir,
                             const CostModel& cost, std::size_t max_kept_bytes,
                             const std::function<void(const Request&)>& observe, AttemptRule attempts)
    : options_(std::move(options)),
      done_(done),
      output_dir_(std::move(output_dir)),
      attempts_(attempts) {
  ManifestSource source(options_);
  ResumeSource filtered(source, done_, options_.path.string(), output_dir_, attempts_);
  passes_ = 1;
  std::size_t bytes = 0;
  while (auto request = filtered.next()) {
    add_to_plan(plan_, *request, cost);
    if (observe) observe(*request);
    if (tail_start_) continue;
    const std::size_t b = request_bytes(*request);
    if (bytes + b <= max_kept_bytes) {
      bytes += b;
      kept_.push_back(std::move(*request));
    } else {
      tail_start_ = source.reader().position();  // this request's line
    }
  }
  skipped_ = filtered.skipped();
  plan_.filtered = source.reader().filtered();
}

std::optional<Request> PlannedSource::next() {
  if (!kept_.empty()) {
    std::optional<Request> r(std::move(kept_.front()));
    kept_.pop_front();
    return r;
  }
  if (!tail_start_) return std::nullopt;
  if (!tail_) {
    ManifestOptions o = options_;
    o.start = *tail_start_;
    tail_source_ = std::make_unique<ManifestSource>(std::move(o));
    tail_ = std::make_unique<ResumeSource>(*tail_source_, done_, options_.path.string(),
                                           output_dir_, attempts_);
    ++passes_;
  }
  return tail_->next();
}

JobInputs::JobInputs(const Config& config, bool resume, const DoneScan& scan_done,
                     const std::function<void(const Request&)>& observe, bool count_attempts)
    : dir_(config.output.dir),
      manifest_(job_manifest_options(config)),
      cost_(describe_model(config.model)) {
  // The file hash cache is read here and written only by save_hash_cache.
  manifest_.hash_cache = std::make_shared<FileHashCache>();
  (void)manifest_.hash_cache->load(file_hash_cache_path(dir_));
  if (resume && path_taken(dir_) && scan_done) done_ = scan_done(dir_);
  AttemptRule rule;
  if (count_attempts && resume) {
    attempts_ = results::read_attempt_logs(dir_);
    rule = AttemptRule{&attempts_, config.scheduler.max_retries};
  }
  source_ = std::make_unique<PlannedSource>(manifest_, done_, dir_.string(), cost_,
                                            kDefaultKeptBytes, observe, rule);
  const JobPlan& p = source_->plan();
  if (p.to_run + source_->skipped() == 0) {  // nothing to do is a defect of the manifest (exit 2)
    throw no_requests_error(manifest_, 0, p.filtered);
  }
  cache_saved_ = !manifest_.hash_cache->changed();
}

void JobInputs::save_hash_cache() {
  std::error_code ec;
  if (cache_saved_ || !std::filesystem::is_directory(dir_, ec)) return;
  cache_saved_ = true;
  try {
    manifest_.hash_cache->save(file_hash_cache_path(dir_));
  } catch (const Error& e) {  // a cache only: the job goes on without it
    log_warn(std::string("file hash cache not saved: ") + e.what());
  }
}

}  // namespace omnidp::runtime
