#include "omnidp/models/pipelines/step_cache.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstdlib>

#include "omnidp/collective/collective.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/common/format.hpp"
#include "omnidp/common/log.hpp"
#include "omnidp/models/layers/collective_ops.hpp"

namespace omnidp::models {
namespace {

// Python's a % b for b > 0 (the result has b's sign).
int python_mod(int a, int b) { return ((a % b) + b) % b; }

double factorial(int n) {
  double f = 1.0;
  for (int i = 2; i <= n; ++i) f *= i;
  return f;
}

// Sums `values` over `group` (float32: magnitudes and counts).
std::vector<double> group_sums(Collective& group, const std::vector<double>& values,
                               const torch::Device& device) {
  auto t = torch::tensor(std::vector<float>(values.begin(), values.end()),
                         torch::TensorOptions().dtype(torch::kFloat32))
               .to(device);
  t = all_reduce_sum(group, t).to(torch::kCPU, torch::kFloat64);
  return {t.data_ptr<double>(), t.data_ptr<double>() + t.numel()};
}

// The key of a (transformer, branch) state, and its name in the logs: "transformer 0 cond".
std::pair<int, int> state_key(int expert, CfgBranch branch) {
  return {expert, branch == CfgBranch::conditional ? 0 : 1};
}
std::string state_name(const std::pair<int, int>& key) {
  return fmt::format("transformer {} {}", key.first, key.second == 0 ? "cond" : "uncond");
}

}  // namespace

std::vector<double> nearest_interp(const std::vector<double>& ratios, int length) {
  if (ratios.empty() || length <= 0) return {};
  if (length == 1) return {ratios.back()};
  const double scale = static_cast<double>(ratios.size() - 1) / static_cast<double>(length - 1);
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(length));
  for (int i = 0; i < length; ++i) {  // numpy's round: half to even, as nearbyint
    out.push_back(ratios[static_cast<std::size_t>(std::nearbyint(i * scale))]);
  }
  return out;
}

StepCache::StepCache(const StepCacheConfig& config, int steps, int first_step,
                     const std::vector<double>& mag_ratios, Collective* sequence)
    : config_(config), steps_(steps), sequence_(sequence), mag_step_(first_step) {
  if (config_.policy == CachePolicy::magcache && !config_.calibrate) {
    if (mag_ratios.empty()) {
      throw ModelError(
          "the magcache step cache needs mag_ratios (generation.cache.mag_ratios): MagCache "
          "published no ratios for this checkpoint (docs/models.md, \"Step caching\"); measure "
          "them with calibrate: true");
    }
    ratios_ = static_cast<int>(mag_ratios.size()) == steps ? mag_ratios
                                                           : nearest_interp(mag_ratios, steps);
  }
}

int StepCache::computed() const noexcept {
  int n = 0;
  for (const char d : decisions_) n += d == 'C' ? 1 : 0;
  return n;
}

torch::Tensor StepCache::forward(const std::function<torch::Tensor(StepCache*)>& run) {
  if (config_.policy != CachePolicy::taylorseer) {
    in_forward_ = true;
    block_decision_ = true;
    auto out = run(this);
    in_forward_ = false;
    decisions_.push_back(block_decision_ ? 'C' : 'S');
    return out;
  }
  // TaylorSeer (lite): a fixed schedule over this state's forwards.
  const int s = ++step_;
  const int before = config_.disable_cache_before_step;
  const bool compute = s < before || python_mod(s - before - 1, config_.cache_interval) == 0;
  if (compute) {
    auto out = run(this);
    const auto dtype = out.scalar_type();
    std::vector<torch::Tensor> fresh{out};
    if (last_update_ >= 0) {
      const auto delta = static_cast<std::int64_t>(s - last_update_);
      for (std::size_t j = 0; j < static_cast<std::size_t>(config_.max_order); ++j) {
        if (j >= factors_.size()) break;
        fresh.push_back((fresh[j] - factors_[j].to(dtype)) / delta);
      }
    }
    factors_.clear();
    for (const auto& f : fresh) factors_.push_back(f.to(torch::kFloat32));
    last_update_ = s;
    out_dtype_ = dtype;
    decisions_.push_back('C');
    return out;
  }
  if (factors_.empty()) throw ModelError("taylorseer: a prediction before any computed forward");
  const auto offset = static_cast<std::int64_t>(s - last_update_);
  const auto dtype = out_dtype_;  // the output's, as diffusers' module_dtypes
  auto out = torch::zeros_like(factors_.front(), torch::TensorOptions().dtype(dtype));
  for (std::size_t order = 0; order < factors_.size(); ++order) {
    const double coeff = std::pow(static_cast<double>(offset), static_cast<double>(order)) /
                         factorial(static_cast<int>(order));
    out = out + factors_[order].to(dtype) * coeff;
  }
  decisions_.push_back('S');
  return out;
}

BlockStreams StepCache::blocks(BlockStreams in, std::size_t count, const BlockFn& block) {
  switch (config_.policy) {
    case CachePolicy::first_block: return first_block(std::move(in), count, block);
    case CachePolicy::magcache: return magcache(std::move(in), count, block);
    case CachePolicy::off:
    case CachePolicy::taylorseer: break;
  }
  return run_blocks(nullptr, std::move(in), count, block);
}

double StepCache::relative_change(const torch::Tensor& residual) const {
  const auto& prev = head_residual_;
  if (sequence_ == nullptr) {  // as diffusers: the two means in the activations' dtype
    return ((residual - prev).abs().mean() / prev.abs().mean()).item<double>();
  }
  const auto sums = group_sums(*sequence_,
                               {(residual - prev).abs().sum(torch::kFloat32).item<double>(),
                                prev.abs().sum(torch::kFloat32).item<double>()},
                               residual.device());
  return sums[0] / sums[1];
}

BlockStreams StepCache::first_block(BlockStreams in, std::size_t count, const BlockFn& block) {
  if (count < 2) {
    throw ModelError("the first_block step cache needs a stack of at least 2 blocks");
  }
  auto head = block(0, in);
  auto residual = head.hidden - in.hidden;
  const bool compute =
      !head_residual_.defined() || relative_change(residual) > config_.resolved_threshold();
  block_decision_ = compute;
  if (!compute) {
    BlockStreams out{tail_residual_.hidden + head.hidden, head.context};
    if (head.context.defined()) out.context = tail_residual_.context + head.context;
    return out;
  }
  head_residual_ = std::move(residual);
  BlockStreams x = head;
  for (std::size_t i = 1; i < count; ++i) x = block(i, std::move(x));
  tail_residual_.hidden = x.hidden - head.hidden;
  tail_residual_.context = x.context.defined() ? x.context - head.context : torch::Tensor();
  return x;
}

double StepCache::mean_norm_ratio(const torch::Tensor& current) const {
  const auto norm = [](const torch::Tensor& r) {  // over the channels of every token
    return r.to(torch::kFloat32).pow(2).sum(-1).sqrt();
  };
  const auto ratio = norm(current) / (norm(previous_residual_) + 1e-8);
  if (sequence_ == nullptr) return ratio.mean().item<double>();
  const auto sums = group_sums(
      *sequence_, {ratio.sum().item<double>(), static_cast<double>(ratio.numel())}, current.device());
  return sums[0] / sums[1];
}

BlockStreams StepCache::magcache(BlockStreams in, std::size_t count, const BlockFn& block) {
  bool compute = true;
  if (!config_.calibrate) {
    const int s = mag_step_;
    const double scale =
        s < static_cast<int>(ratios_.size()) ? ratios_[static_cast<std::size_t>(s)] : 1.0;
    const int retention = static_cast<int>(config_.retention_ratio * steps_ + 0.5);
    if (s >= retention) {
      accumulated_ratio_ *= scale;
      accumulated_steps_ += 1;
      accumulated_err_ += std::abs(1.0 - accumulated_ratio_);
      if (previous_residual_.defined() && accumulated_err_ <= config_.resolved_threshold() &&
          accumulated_steps_ <= config_.max_skip_steps) {
        compute = false;
      } else {
        accumulated_ratio_ = 1.0;
        accumulated_steps_ = 0;
        accumulated_err_ = 0.0;
      }
    }
  }
  ++mag_step_;
  block_decision_ = compute;
  if (!compute) return {in.hidden + previous_residual_, in.context};
  auto out = run_blocks(nullptr, in, count, block);
  auto residual = out.hidden - in.hidden;
  if (config_.calibrate) {
    calibration_.push_back(previous_residual_.defined() ? mean_norm_ratio(residual) : 1.0);
  }
  previous_residual_ = std::move(residual);
  return out;
}

BlockStreams run_blocks(StepCache* cache, BlockStreams in, std::size_t count, const BlockFn& block) {
  if (cache != nullptr) return cache->blocks(std::move(in), count, block);
  for (std::size_t i = 0; i < count; ++i) in = block(i, std::move(in));
  return in;
}

RequestCaches::RequestCaches(StepCacheConfig config, int steps, Collective* sequence,
                             const MagCachePreset* preset)
    : config_(std::move(config)), steps_(steps), sequence_(sequence), preset_(preset) {}

torch::Tensor RequestCaches::forward(int expert, CfgBranch branch, int step,
                                     const std::function<torch::Tensor(StepCache*)>& run) {
  if (branch == CfgBranch::both) {
    if (active()) throw ModelError("a step cache runs the CFG branches as two forwards");
    counts_.forwards += 2;
    counts_.computed += 2;
    return run(nullptr);
  }
  if (!active()) {
    counts_.forwards += 1;
    counts_.computed += 1;
    return run(nullptr);
  }
  const auto key = state_key(expert, branch);
  auto it = caches_.find(key);
  if (it == caches_.end()) {
    std::vector<double> ratios = config_.mag_ratios;
    if (ratios.empty() && preset_ != nullptr && config_.policy == CachePolicy::magcache &&
        !config_.calibrate) {
      ratios = preset_->branch(branch);
      preset_used_ = true;
    }
    it = caches_.try_emplace(key, config_, steps_, expert == 0 ? 0 : step, ratios, sequence_).first;
  }
  StepCache& cache = it->second;
  const int before = cache.computed();
  auto out = cache.forward(run);
  counts_.forwards += 1;
  counts_.computed += cache.computed() - before;
  return out;
}

const StepCache* RequestCaches::find(int expert, CfgBranch branch) const {
  const auto it = caches_.find(state_key(expert, branch));
  return it == caches_.end() ? nullptr : &it->second;
}

std::string RequestCaches::describe() const {
  std::vector<std::string> parts;
  for (const auto& [key, cache] : caches_) {
    parts.push_back(state_name(key) + " " + cache.decisions());
  }
  const auto text = fmt::format("{}", fmt::join(parts, ", "));
  return preset_used_ ? fmt::format("ratios of preset {}: {}", preset_->name, text) : text;
}

std::string RequestCaches::calibration() const {
  std::vector<std::string> parts;
  for (const auto& [key, cache] : caches_) {
    if (cache.calibration().empty()) continue;
    std::vector<std::string> values;
    for (const double r : cache.calibration()) values.push_back(fmt::format("{:.5f}", r));
    parts.push_back(fmt::format("{} [{}]", state_name(key), fmt::join(values, ", ")));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

ForwardCounts total_counts(const ForwardCounts& counts, Collective* cfg, const torch::Device& device) {
  if (cfg == nullptr) return counts;
  const auto sums = group_sums(
      *cfg, {static_cast<double>(counts.forwards), static_cast<double>(counts.computed)}, device);
  return {static_cast<int>(std::lround(sums[0])), static_cast<int>(std::lround(sums[1]))};
}

CacheReport RequestCaches::report(Collective* cfg, const torch::Device& device) const {
  return {total_counts(counts_, cfg, device), describe(), calibration()};
}

void report_forwards(const Request& request, const GenerateContext& ctx, const CacheReport& report,
                     const StepCacheConfig& cache) {
  if (ctx.on_forwards) ctx.on_forwards(report.forwards);
  if (!report.decisions.empty()) {
    log_info(fmt::format("request '{}': step cache {}: {} ({} of {} forwards computed)", request.id,
                         describe_cache(cache), report.decisions, report.forwards.computed,
                         report.forwards.forwards));
  }
  if (!report.calibration.empty()) {
    log_info(fmt::format("request '{}': magcache calibration (mag_ratios per forward): {}",
                         request.id, report.calibration));
  }
}

}  // namespace omnidp::models
