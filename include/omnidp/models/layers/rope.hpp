#pragma once
// The 3-D rotary position embedding of video tokens (frame, row, column), shared by the models:
// each attention head's dimension pairs (2j, 2j+1) rotate by the angle of one axis's position
// times a frequency theta^(-2i/d) of that axis (d its share of the head dimension).

#include <torch/torch.h>

#include <array>
#include <cstdint>

namespace omnidp::models {

// Where and in which precision the angles and their cos/sin are computed (the result is float32
// either way): as HunyuanVideo-1.5's reference (float32 on the model's device) or as Wan's
// (float64 on the CPU, rounded to float32).
enum class RopeTables { device_float32, cpu_float64 };

struct Rope3dOptions {
  // Each axis's share of the head dimension (even, summing to it): its frequencies.
  std::array<std::int64_t, 3> axes_dim{};
  // Which columns of the concatenated per-axis tables [S, D] each axis then reads; diffusers'
  // Wan computes the tables with axes_dim (D - 4(D/6), 2(D/6), 2(D/6)) but reads them split at
  // (D - 2(D/3), D/3, D/3): equal for head dim 128, not for 64 (a pair can then take its cos
  // and its sin from different axes). Zeros: axes_dim.
  std::array<std::int64_t, 3> split_dim{};
  double theta = 10000.0;
  RopeTables tables = RopeTables::device_float32;
  std::int64_t max_positions = 0;  // > 0: a longer axis is a ModelError (Wan's rope_max_seq_len)
};

// cos and sin [F*H*W, D/2] float32 on `device` for the tokens of an F x H x W grid in frame-major
// order: pair j's cos from column 2j of the full-width tables, its sin from column 2j+1 (each
// table repeats an angle for both columns of a pair; the split above can make them differ).
[[nodiscard]] std::pair<torch::Tensor, torch::Tensor> rope_3d_tables(const Rope3dOptions& options,
                                                                     std::int64_t frames,
                                                                     std::int64_t height,
                                                                     std::int64_t width,
                                                                     const torch::Device& device);

// The rotations of rope_3d_tables as complex64 [L, 1, D/2] (cos + i sin), what apply_rope and
// rms_norm_rope (layers/fused.hpp) take for x [B, L, H, D].
class Rope3d {
 public:
  explicit Rope3d(Rope3dOptions options) : options_(options) {}

  // The rotations of an F x H x W grid on `device`, cached for the last grid and device (not
  // thread-safe: one model instance per thread, as the worker runs it).
  [[nodiscard]] const torch::Tensor& freqs(std::int64_t frames, std::int64_t height,
                                           std::int64_t width, const torch::Device& device);
  // Forgets the cache (after the model moved to another device or dtype).
  void clear() { freqs_ = torch::Tensor(); }

  [[nodiscard]] const Rope3dOptions& options() const noexcept { return options_; }

 private:
  Rope3dOptions options_;
  std::array<std::int64_t, 3> grid_{-1, -1, -1};
  torch::Tensor freqs_;
};

// The one rotary embedding of the models: rotates x [..., H, D] pairwise,
// (x[2i] + i x[2i+1]) * freqs[..., i], freqs complex64 broadcastable to [..., H, D/2]
// (cos + i sin); computed in float32, returned in x's dtype. A complex multiply where
// fused_elementwise() (layers/fused.hpp), the reference's real expression otherwise
// (x1 cos - x2 sin, x1 sin + x2 cos).
[[nodiscard]] torch::Tensor apply_rope(const torch::Tensor& x, const torch::Tensor& freqs);

// apply_rope per head of x [B, L, H * head_dim] (heads flattened), freqs [L, 1, head_dim/2];
// undefined freqs: no rotation. Returns [B, L, H * head_dim] contiguous.
[[nodiscard]] torch::Tensor apply_rope_heads(const torch::Tensor& x, const torch::Tensor& freqs,
                                             std::int64_t head_dim);

}  // namespace omnidp::models
