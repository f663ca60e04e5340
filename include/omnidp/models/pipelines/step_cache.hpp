#pragma once
// Step caching (generation.cache; docs/models.md, "Step caching"): which transformer forwards
// of a request run their block stack and which are served from a cache. One mechanism for
// every model: a pipeline routes each branch's forward through RequestCaches::forward, and a
// transformer runs its block stack through run_blocks(); the policies follow diffusers' hooks
// (src/diffusers/hooks/first_block_cache.py, taylorseer_cache.py, mag_cache.py):
//
//  - first_block (FirstBlockCacheConfig): block 0 always runs; when the mean |change| of its
//    residual since the last computed forward, relative to that residual's mean ||, is at most
//    `threshold`, the other blocks are skipped and the residual they added last time is added
//    to block 0's output (to both streams of a double-stream model).
//  - taylorseer (TaylorSeerCacheConfig with use_lite_mode: the blocks skipped, the output
//    projection's features predicted): forwards < disable_cache_before_step and those where
//    (forward - disable_cache_before_step - 1) mod cache_interval == 0 run; the others return the
//    Taylor extrapolation of order <= max_order from the divided differences of the outputs
//    of the computed forwards (kept in float32).
//  - magcache (MagCacheConfig): from step round(retention_ratio x steps) on, the ratios of the
//    schedule are multiplied up; while the accumulated error sum |1 - ratio| stays <= threshold
//    and at most max_skip_steps forwards in a row are skipped, a forward adds the stack's last
//    residual to its input instead of running the blocks. `calibrate` skips nothing and
//    records mean_tokens(|r_i| / (|r_(i-1)| + 1e-8)) for each forward.
//
// Each (transformer, CFG branch) of a request has its own state, as diffusers' cache contexts
// ("cond", "uncond") do; with a cache the branches run as two forwards, never as one batch.
// Ranks of a sequence-parallel group decide alike (first_block's sums and magcache's
// calibration means are all-reduced over the group; the other decisions depend on step
// counts only); tensor-parallel ranks hold the same activations. Not thread-safe: one request
// on one thread.

#include <torch/torch.h>

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "omnidp/config/config.hpp"
#include "omnidp/models/pipeline.hpp"
#include "omnidp/models/pipelines/guided_step.hpp"
#include "omnidp/models/pipelines/mag_presets.hpp"

namespace omnidp::runtime {
class Collective;
}  // namespace omnidp::runtime

namespace omnidp::models {

// The streams a block stack carries: the video tokens, and the text tokens of a double-stream
// model (HunyuanVideo-1.5; undefined for Wan).
struct BlockStreams {
  torch::Tensor hidden;
  torch::Tensor context;
};
// Runs block `index` of a stack on `in`.
using BlockFn = std::function<BlockStreams(std::size_t index, BlockStreams in)>;

// The cache of one transformer for one CFG branch of one request.
class StepCache {
 public:
  // `steps`: the request's denoising steps; `first_step`: the step of this state's first
  // forward (magcache indexes its ratios by step: an expert that takes over mid-schedule
  // starts there); `mag_ratios`: the ratios as given (nearest-interpolated to `steps` as
  // diffusers does); `sequence`: the Ulysses group, or null.
  StepCache(const StepCacheConfig& config, int steps, int first_step,
            const std::vector<double>& mag_ratios, Collective* sequence);

  // One forward: taylorseer on a cached forward returns its prediction without calling `run`;
  // otherwise run(this), and the transformer passes this cache to run_blocks().
  [[nodiscard]] torch::Tensor forward(const std::function<torch::Tensor(StepCache*)>& run);

  // The block stack of the forward in progress (first_block, magcache decide here).
  [[nodiscard]] BlockStreams blocks(BlockStreams in, std::size_t count, const BlockFn& block);

  // 'C' computed, 'S' served from the cache: one letter per forward, in order.
  [[nodiscard]] const std::string& decisions() const noexcept { return decisions_; }
  [[nodiscard]] int forwards() const noexcept { return static_cast<int>(decisions_.size()); }
  [[nodiscard]] int computed() const noexcept;
  // magcache calibrate: one ratio per forward (1 for the first).
  [[nodiscard]] const std::vector<double>& calibration() const noexcept { return calibration_; }

 private:
  BlockStreams first_block(BlockStreams in, std::size_t count, const BlockFn& block);
  BlockStreams magcache(BlockStreams in, std::size_t count, const BlockFn& block);
  [[nodiscard]] double relative_change(const torch::Tensor& residual) const;
  [[nodiscard]] double mean_norm_ratio(const torch::Tensor& current) const;

  StepCacheConfig config_;
  int steps_;
  Collective* sequence_;
  std::vector<double> ratios_;  // magcache, one per step
  std::string decisions_;
  bool in_forward_ = false;
  bool block_decision_ = true;  // the decision blocks() took in the forward in progress
  // first_block
  torch::Tensor head_residual_;
  BlockStreams tail_residual_;
  // taylorseer
  int step_ = -1;
  int last_update_ = -1;
  std::vector<torch::Tensor> factors_;  // float32
  torch::ScalarType out_dtype_ = torch::kFloat32;
  // magcache
  int mag_step_ = 0;
  double accumulated_ratio_ = 1.0;
  double accumulated_err_ = 0.0;
  int accumulated_steps_ = 0;
  torch::Tensor previous_residual_;
  std::vector<double> calibration_;
};

// Runs a stack of `count` blocks through `cache`, or each block in turn when it is null.
[[nodiscard]] BlockStreams run_blocks(StepCache* cache, BlockStreams in, std::size_t count,
                                      const BlockFn& block);

// diffusers' nearest_interp: `ratios` resampled to `length` entries (index round-half-even of
// i (n - 1) / (length - 1); length 1: the last).
[[nodiscard]] std::vector<double> nearest_interp(const std::vector<double>& ratios, int length);

// What a request's caches did: the counts over the CFG group, this rank's decisions and
// calibration (RequestCaches::describe(), calibration()).
struct CacheReport {
  ForwardCounts forwards;
  std::string decisions;
  std::string calibration;
};

// The caches of one request: one StepCache per (transformer, branch), made at first use.
// With the policy off it only counts the forwards.
class RequestCaches {
 public:
  // `preset`: the checkpoint's published magcache ratios (mag_presets.hpp; null: none), each
  // branch its own, used when config.mag_ratios is empty; ModelError at the first magcache
  // forward when both are missing and not calibrating. The preset must outlive this object.
  RequestCaches(StepCacheConfig config, int steps, Collective* sequence,
                const MagCachePreset* preset = nullptr);

  [[nodiscard]] bool active() const noexcept { return config_.policy != CachePolicy::off; }
  // The forward of `branch` of transformer `expert` at denoising step `step`. CfgBranch::both
  // (one batch of the two branches) only with the policy off; it counts as two forwards.
  [[nodiscard]] torch::Tensor forward(int expert, CfgBranch branch, int step,
                                      const std::function<torch::Tensor(StepCache*)>& run);
  // This rank's forwards (the whole request's: sum over the CFG group, total_counts()).
  [[nodiscard]] ForwardCounts counts() const noexcept { return counts_; }
  // "transformer 0 cond CCCSCSS, transformer 0 uncond CCSS..." (empty with the policy off),
  // after "ratios of preset <name>: " where a magcache forward took the preset's.
  [[nodiscard]] std::string describe() const;
  // magcache calibrate: "transformer 0 cond [1, 1.02, ...]; ..." (empty otherwise).
  [[nodiscard]] std::string calibration() const;
  [[nodiscard]] const StepCache* find(int expert, CfgBranch branch) const;
  // The report of the whole request: every rank of the CFG group `cfg` (null: none) calls it.
  [[nodiscard]] CacheReport report(Collective* cfg, const torch::Device& device) const;

 private:
  StepCacheConfig config_;
  int steps_;
  Collective* sequence_;
  const MagCachePreset* preset_;
  bool preset_used_ = false;
  std::map<std::pair<int, int>, StepCache> caches_;
  ForwardCounts counts_;
};

// `counts` summed over the CFG group (each rank counted its branch), or as given without one.
[[nodiscard]] ForwardCounts total_counts(const ForwardCounts& counts, Collective* cfg,
                                         const torch::Device& device);

// What a pipeline's generate() reports of a request's forwards, on every rank of its group:
// ctx.on_forwards(counts) where set, and with a cache one info line naming the request with
// this rank's decisions ("request 'a': step cache taylorseer(...): transformer 0 cond CCCS...")
// and one with magcache's calibration ratios where measured.
void report_forwards(const Request& request, const GenerateContext& ctx, const CacheReport& report,
                     const StepCacheConfig& cache);

}  // namespace omnidp::models
