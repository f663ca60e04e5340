#include "omnidp/models/layers/rope.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <string>
#include <vector>

#include "omnidp/common/error.hpp"
#include "omnidp/models/layers/fused_switch.hpp"

namespace omnidp::models {

std::pair<torch::Tensor, torch::Tensor> rope_3d_tables(const Rope3dOptions& o, std::int64_t frames,
                                                       std::int64_t height, std::int64_t width,
                                                       const torch::Device& device) {
  const std::array<std::int64_t, 3> grid{frames, height, width};
  const auto longest = *std::max_element(grid.begin(), grid.end());
  if (o.max_positions > 0 && longest > o.max_positions) {
    throw ModelError(fmt::format("latent grid {}x{}x{} exceeds rope_max_seq_len {}", frames, height,
                                 width, o.max_positions));
  }
  const bool f64 = o.tables == RopeTables::cpu_float64;
  const auto opts = torch::TensorOptions()
                        .dtype(f64 ? torch::kFloat64 : torch::kFloat32)
                        .device(f64 ? torch::Device(torch::kCPU) : device);
  // Full-width tables [S, D] over positions 0..S-1: per axis, each angle repeated for its pair.
  const auto pos = torch::arange(longest, opts);
  std::vector<torch::Tensor> cos_parts, sin_parts;
  for (const std::int64_t dim : o.axes_dim) {
    const auto exponent =
        torch::arange(0, dim, 2, opts).slice(0, 0, dim / 2) / static_cast<double>(dim);
    const auto angles = torch::outer(pos, 1.0 / torch::pow(o.theta, exponent));  // [S, dim/2]
    cos_parts.push_back(angles.cos().repeat_interleave(2, 1).to(torch::kFloat32));
    sin_parts.push_back(angles.sin().repeat_interleave(2, 1).to(torch::kFloat32));
  }
  const auto split = o.split_dim[0] > 0 ? o.split_dim : o.axes_dim;
  const std::vector<std::int64_t> sizes(split.begin(), split.end());
  // Axis a's columns, indexed by the token's position along a, for every token of the grid.
  const auto per_token = [&](const std::vector<torch::Tensor>& table) {
    const auto parts = torch::cat(table, 1).split_with_sizes(sizes, 1);
    std::vector<torch::Tensor> cols;
    for (std::size_t a = 0; a < 3; ++a) {
      std::vector<std::int64_t> shape{1, 1, 1, -1};
      shape[a] = grid[a];
      cols.push_back(parts[a].slice(0, 0, grid[a]).view(shape).expand({frames, height, width, -1}));
    }
    return torch::cat(cols, -1).reshape({frames * height * width, -1});
  };
  const auto cos_full = per_token(cos_parts);
  const auto sin_full = per_token(sin_parts);
  const auto d = cos_full.size(1);
  return {cos_full.slice(1, 0, d, 2).contiguous().to(device),
          sin_full.slice(1, 1, d, 2).contiguous().to(device)};
}

const torch::Tensor& Rope3d::freqs(std::int64_t frames, std::int64_t height, std::int64_t width,
                                   const torch::Device& device) {
  const std::array<std::int64_t, 3> grid{frames, height, width};
  if (grid != grid_ || !freqs_.defined() || freqs_.device() != device) {
    const auto [cos, sin] = rope_3d_tables(options_, frames, height, width, device);
    freqs_ = torch::complex(cos, sin).unsqueeze(1);
    grid_ = grid;
  }
  return freqs_;
}

torch::Tensor apply_rope(const torch::Tensor& x, const torch::Tensor& freqs) {
  if (!fused_elementwise()) {
    // The reference's expression: x1*cos - x2*sin, x1*sin + x2*cos, interleaved.
    const auto pairs = x.to(torch::kFloat32).unflatten(-1, {-1, 2});
    const auto x1 = pairs.select(-1, 0);
    const auto x2 = pairs.select(-1, 1);
    const auto c = torch::real(freqs);
    const auto s = torch::imag(freqs);
    return torch::stack({x1 * c - x2 * s, x1 * s + x2 * c}, -1).flatten(-2).to(x.scalar_type());
  }
  const auto pairs = torch::view_as_complex(x.to(torch::kFloat32).unflatten(-1, {-1, 2}));
  return torch::view_as_real(pairs * freqs).flatten(-2).to(x.scalar_type());
}

torch::Tensor apply_rope_heads(const torch::Tensor& x, const torch::Tensor& freqs,
                               std::int64_t head_dim) {
  if (!freqs.defined()) return x.contiguous();
  return apply_rope(x.unflatten(-1, {-1, head_dim}), freqs).flatten(-2);
}

}  // namespace omnidp::models
