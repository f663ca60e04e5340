#pragma once
// MagCache's published calibrations (docs/models.md, "Step caching"): the magnitude ratios the
// MagCache authors measured per step and CFG branch for each released checkpoint
// (Zehong-Ma/MagCache's magcache_generate.py for Wan2.1 and Wan2.2, Zehong-Ma/ComfyUI-MagCache's
// nodes.py for HunyuanVideo-1.5), with the operating point their READMEs recommend. A request
// with generation.cache magcache and no mag_ratios takes the preset of its checkpoint, each
// branch's ratios resampled to its steps by nearest_interp (the reference scripts' and
// diffusers' resampling). The ratios were calibrated with SDPA attention: another kernel may
// shift them in the last digits (calibrate: true measures one's own). Thread-safe (immutable).

#include <string_view>
#include <vector>

#include "omnidp/models/pipelines/guided_step.hpp"

namespace omnidp::models {

// Which requests of its checkpoint a preset was calibrated for.
enum class MagPresetWhen {
  any,
  text_only,   // Wan2.2-TI2V-5B without an image
  with_image,  // Wan2.2-TI2V-5B with one
  area_480p,   // Wan2.1-I2V-14B: the larger side below 1280
  area_720p,   // ... and from 1280 on
};

struct MagCachePreset {
  std::string_view name;        // "wan2.2-t2v-a14b"
  std::string_view checkpoint;  // the released checkpoint (wan_variant_name, "hunyuanvideo-1.5")
  MagPresetWhen when = MagPresetWhen::any;
  int steps = 0;            // the calibration's steps
  std::string_view source;  // file and line of the published array
  // The authors' recommended operating point (their README; MagCache's K is max_skip_steps).
  double threshold = 0.0;
  int max_skip_steps = 0;
  double retention_ratio = 0.0;
  // As published: cond, uncond per step from step 1 on (2 x steps - 2 values).
  std::vector<double> interleaved;

  // One branch's ratios per step, step 0's 1.0 first (`steps` values).
  [[nodiscard]] std::vector<double> branch(CfgBranch branch) const;
};

[[nodiscard]] const std::vector<MagCachePreset>& mag_cache_presets();

// The preset for a request of `checkpoint` with `steps` steps, `image` conditioning and
// height x width (HunyuanVideo-1.5: the 40-step calibration for more than 20 steps, as
// ComfyUI-MagCache picks it); nullptr where there is none.
[[nodiscard]] const MagCachePreset* find_mag_cache_preset(std::string_view checkpoint, int steps,
                                                          bool image, int height, int width);

}  // namespace omnidp::models
