// Fused bf16 kernels of the transformer hot path (contracts: omnidp/models/layers/cuda_kernels.hpp).
// Row reductions (LayerNorm, RMSNorm) run one block per row; the elementwise residual a
// grid-stride loop. fp32 arithmetic, the same roundings as the libtorch expressions they replace.
// Two variants of each: 16-byte vectors of 8 bf16 held in registers (one read of the input, for
// aligned rows of up to kRowThreads * kMaxVectors * 8 elements), and bf16 pairs for the rest.
#include "omnidp/models/layers/cuda_kernels.hpp"

#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cstdint>

namespace omnidp::models {
namespace {

constexpr int kThreads = 256;     // pair kernels
constexpr int kRowThreads = 128;  // vector kernels: one block per row
constexpr int kMaxVectors = 4;    // vectors of 8 per thread: rows up to 4096 elements

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffU, v, offset);
  return v;
}

// Sum over the block, returned to every thread. scratch: 33 floats of shared memory.
__device__ float block_sum(float v, float* scratch) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  v = warp_sum(v);
  __syncthreads();  // the previous call's readers are done with scratch
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    const int warps = static_cast<int>((blockDim.x + 31) / 32);
    v = warp_sum(lane < warps ? scratch[lane] : 0.0F);
    if (lane == 0) scratch[32] = v;
  }
  __syncthreads();
  return scratch[32];
}

__device__ __forceinline__ float round_bf16(float v) {
  return __bfloat162float(__float2bfloat16(v));
}

// 8 bf16 <-> 8 floats through one 16-byte access.
__device__ __forceinline__ void load8(const __nv_bfloat16* p, float (&v)[8]) {
  const uint4 raw = *reinterpret_cast<const uint4*>(p);
  const auto* h = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __bfloat1622float2(h[i]);
    v[2 * i] = f.x;
    v[2 * i + 1] = f.y;
  }
}

__device__ __forceinline__ void store8(__nv_bfloat16* p, const float (&v)[8]) {
  uint4 raw;
  auto* h = reinterpret_cast<__nv_bfloat162*>(&raw);
#pragma unroll
  for (int i = 0; i < 4; ++i) h[i] = __floats2bfloat162_rn(v[2 * i], v[2 * i + 1]);
  *reinterpret_cast<uint4*>(p) = raw;
}

__device__ __forceinline__ void load8(const float* p, float (&v)[8]) {
  const float4 a = *reinterpret_cast<const float4*>(p);
  const float4 b = *reinterpret_cast<const float4*>(p + 4);
  v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// Vector kernels: loads this thread's vectors of a row (vector c = threadIdx.x + i * kRowThreads
// for every c < vectors) into registers and returns the sum of f(value) over them.
template <typename F>
__device__ __forceinline__ float load_row(const __nv_bfloat16* row, std::int64_t vectors,
                                          float (&v)[kMaxVectors][8], F f) {
  float sum = 0.0F;
#pragma unroll
  for (int i = 0; i < kMaxVectors; ++i) {
    const std::int64_t c = threadIdx.x + i * kRowThreads;
    if (c < vectors) {
      load8(row + c * 8, v[i]);
#pragma unroll
      for (int j = 0; j < 8; ++j) sum += f(v[i][j]);
    }
  }
  return sum;
}

// Vector kernels: v = bf16(v + bias) over this thread's vectors of a row (as load_row loaded
// them); returns the new sum of squares.
__device__ __forceinline__ float add_bias_row(const __nv_bfloat16* bias, std::int64_t vectors,
                                              float (&v)[kMaxVectors][8]) {
  float sum = 0.0F;
#pragma unroll
  for (int i = 0; i < kMaxVectors; ++i) {
    const std::int64_t c = threadIdx.x + i * kRowThreads;
    if (c < vectors) {
      float d[8];
      load8(bias + c * 8, d);
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        v[i][j] = round_bf16(v[i][j] + d[j]);
        sum += v[i][j] * v[i][j];
      }
    }
  }
  return sum;
}

// --- LayerNorm + modulation / affine ---------------------------------------------------------
// kRoundNorm: the normalised value is rounded to bf16 before the modulation (AdaLN: the
// reference normalises in float32 and casts before modulating); otherwise the affine step is
// applied in float32 and rounded once (FP32LayerNorm with weight and bias).

template <bool kRoundNorm>
__global__ void __launch_bounds__(kRowThreads)
    layer_norm_v8_kernel(const __nv_bfloat16* __restrict__ x, __nv_bfloat16* __restrict__ out,
                         const float* __restrict__ shift, const float* __restrict__ scale,
                         std::int64_t dim, std::int64_t rows_per_group, std::int64_t shift_stride,
                         std::int64_t scale_stride, float eps) {
  __shared__ float scratch[33];
  const std::int64_t r = blockIdx.x;
  const std::int64_t vectors = dim / 8;
  float v[kMaxVectors][8];
  const float sum = load_row(x + r * dim, vectors, v, [](float a) { return a; });
  const float inv_dim = 1.0F / static_cast<float>(dim);
  const float mean = block_sum(sum, scratch) * inv_dim;
  float var = 0.0F;
#pragma unroll
  for (int i = 0; i < kMaxVectors; ++i) {
    if (threadIdx.x + i * kRowThreads < vectors) {
#pragma unroll
      for (int j = 0; j < 8; ++j) var += (v[i][j] - mean) * (v[i][j] - mean);
    }
  }
  const float rstd = rsqrtf(block_sum(var, scratch) * inv_dim + eps);
  const std::int64_t g = r / rows_per_group;
  const float* sh = shift + g * shift_stride;
  const float* sc = scale + g * scale_stride;
#pragma unroll
  for (int i = 0; i < kMaxVectors; ++i) {
    const std::int64_t c = threadIdx.x + i * kRowThreads;
    if (c < vectors) {
      float s[8], k[8];
      load8(sh + c * 8, s);
      load8(sc + c * 8, k);
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        float n = (v[i][j] - mean) * rstd;
        if constexpr (kRoundNorm) n = round_bf16(n);
        v[i][j] = s[j] + n * k[j];
      }
      store8(out + r * dim + c * 8, v[i]);
    }
  }
}

template <bool kRoundNorm>
__global__ void layer_norm_pairs_kernel(const __nv_bfloat162* __restrict__ x,
                                        __nv_bfloat162* __restrict__ out,
                                        const float2* __restrict__ shift,
                                        const float2* __restrict__ scale, std::int64_t pairs,
                                        std::int64_t rows_per_group, std::int64_t shift_stride2,
                                        std::int64_t scale_stride2, float eps) {
  __shared__ float scratch[33];
  const std::int64_t r = blockIdx.x;
  const __nv_bfloat162* xr = x + r * pairs;
  const float inv_dim = 1.0F / static_cast<float>(2 * pairs);
  float sum = 0.0F;
  for (std::int64_t p = threadIdx.x; p < pairs; p += blockDim.x) {
    const float2 v = __bfloat1622float2(xr[p]);
    sum += v.x + v.y;
  }
  const float mean = block_sum(sum, scratch) * inv_dim;
  float var = 0.0F;
  for (std::int64_t p = threadIdx.x; p < pairs; p += blockDim.x) {
    const float2 v = __bfloat1622float2(xr[p]);
    var += (v.x - mean) * (v.x - mean) + (v.y - mean) * (v.y - mean);
  }
  const float rstd = rsqrtf(block_sum(var, scratch) * inv_dim + eps);
  const std::int64_t g = r / rows_per_group;
  const float2* sh = shift + g * shift_stride2;
  const float2* sc = scale + g * scale_stride2;
  __nv_bfloat162* o = out + r * pairs;
  for (std::int64_t p = threadIdx.x; p < pairs; p += blockDim.x) {
    const float2 v = __bfloat1622float2(xr[p]);
    const float2 s = sh[p];
    const float2 k = sc[p];
    float n0 = (v.x - mean) * rstd;
    float n1 = (v.y - mean) * rstd;
    if constexpr (kRoundNorm) {
      n0 = round_bf16(n0);
      n1 = round_bf16(n1);
    }
    o[p] = __floats2bfloat162_rn(s.x + n0 * k.x, s.y + n1 * k.y);
  }
}

template <bool kRoundNorm>
void launch_layer_norm(const void* x, void* out, const float* shift, const float* scale,
                       std::int64_t rows, std::int64_t dim, std::int64_t rows_per_group,
                       std::int64_t shift_stride, std::int64_t scale_stride, float eps) {
  if (rows == 0) return;
  const auto stream = c10::cuda::getCurrentCUDAStream();
  const auto grid = static_cast<unsigned>(rows);
  if (dim % 8 == 0 && dim <= 8 * kRowThreads * kMaxVectors && shift_stride % 4 == 0 &&
      scale_stride % 4 == 0 && aligned16(x) && aligned16(out) && aligned16(shift) &&
      aligned16(scale)) {
    layer_norm_v8_kernel<kRoundNorm><<<grid, kRowThreads, 0, stream>>>(
        static_cast<const __nv_bfloat16*>(x), static_cast<__nv_bfloat16*>(out), shift, scale, dim,
        rows_per_group, shift_stride, scale_stride, eps);
  } else {
    layer_norm_pairs_kernel<kRoundNorm><<<grid, kThreads, 0, stream>>>(
        static_cast<const __nv_bfloat162*>(x), static_cast<__nv_bfloat162*>(out),
        reinterpret_cast<const float2*>(shift), reinterpret_cast<const float2*>(scale), dim / 2,
        rows_per_group, shift_stride / 2, scale_stride / 2, eps);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

void launch_modulated_layer_norm(const void* x, void* out, const float* shift, const float* scale1p,
                                 std::int64_t rows, std::int64_t dim, std::int64_t rows_per_group,
                                 std::int64_t shift_group_stride, std::int64_t scale_group_stride,
                                 float eps) {
  launch_layer_norm<true>(x, out, shift, scale1p, rows, dim, rows_per_group, shift_group_stride,
                          scale_group_stride, eps);
}

void launch_affine_layer_norm(const void* x, void* out, const float* weight, const float* bias,
                              std::int64_t rows, std::int64_t dim, float eps) {
  launch_layer_norm<false>(x, out, bias, weight, rows, dim, rows, 0, 0, eps);
}

// --- gated residual ---------------------------------------------------------------------------
// y' = bf16(y + bias) (the GEMM's rounding of a deferred bias), then x + y' * gate in fp32.

__global__ void gated_residual_v8_kernel(const __nv_bfloat16* __restrict__ x,
                                         const __nv_bfloat16* __restrict__ y,
                                         __nv_bfloat16* __restrict__ out,
                                         const float* __restrict__ gate,
                                         const __nv_bfloat16* __restrict__ bias,
                                         std::int64_t total_vectors, std::int64_t row_vectors,
                                         std::int64_t rows_per_group, std::int64_t group_stride) {
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < total_vectors; i += step) {
    const std::int64_t r = i / row_vectors;
    const std::int64_t c = i - r * row_vectors;
    float a[8], b[8];
    load8(x + i * 8, a);
    load8(y + i * 8, b);
    if (bias != nullptr) {
      float d[8];
      load8(bias + c * 8, d);
#pragma unroll
      for (int j = 0; j < 8; ++j) b[j] = round_bf16(b[j] + d[j]);
    }
    if (gate != nullptr) {
      float g[8];
      load8(gate + (r / rows_per_group) * group_stride + c * 8, g);
#pragma unroll
      for (int j = 0; j < 8; ++j) a[j] += b[j] * g[j];
    } else {
#pragma unroll
      for (int j = 0; j < 8; ++j) a[j] += b[j];
    }
    store8(out + i * 8, a);
  }
}

__global__ void gated_residual_pairs_kernel(const __nv_bfloat162* __restrict__ x,
                                            const __nv_bfloat162* __restrict__ y,
                                            __nv_bfloat162* __restrict__ out,
                                            const float2* __restrict__ gate,
                                            const __nv_bfloat162* __restrict__ bias,
                                            std::int64_t total_pairs, std::int64_t pairs,
                                            std::int64_t rows_per_group, std::int64_t group_stride2) {
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < total_pairs; i += step) {
    const std::int64_t r = i / pairs;
    const std::int64_t p = i - r * pairs;
    const float2 a = __bfloat1622float2(x[i]);
    float2 b = __bfloat1622float2(y[i]);
    if (bias != nullptr) {
      const float2 d = __bfloat1622float2(bias[p]);
      b = make_float2(round_bf16(b.x + d.x), round_bf16(b.y + d.y));
    }
    const float2 gv =
        gate != nullptr ? gate[(r / rows_per_group) * group_stride2 + p] : make_float2(1.0F, 1.0F);
    out[i] = __floats2bfloat162_rn(a.x + b.x * gv.x, a.y + b.y * gv.y);
  }
}

void launch_gated_residual(const void* x, const void* y, void* out, const float* gate,
                           const void* bias, std::int64_t rows, std::int64_t dim,
                           std::int64_t rows_per_group, std::int64_t group_stride) {
  if (rows * dim == 0) return;
  const auto stream = c10::cuda::getCurrentCUDAStream();
  const auto grid = [](std::int64_t items) {
    return static_cast<unsigned>(std::min<std::int64_t>((items + kThreads - 1) / kThreads, 132 * 16));
  };
  if (dim % 8 == 0 && group_stride % 4 == 0 && aligned16(x) && aligned16(y) && aligned16(out) &&
      (gate == nullptr || aligned16(gate)) && (bias == nullptr || aligned16(bias))) {
    const std::int64_t total = rows * dim / 8;
    gated_residual_v8_kernel<<<grid(total), kThreads, 0, stream>>>(
        static_cast<const __nv_bfloat16*>(x), static_cast<const __nv_bfloat16*>(y),
        static_cast<__nv_bfloat16*>(out), gate, static_cast<const __nv_bfloat16*>(bias), total,
        dim / 8, rows_per_group, group_stride);
  } else {
    const std::int64_t total = rows * dim / 2;
    gated_residual_pairs_kernel<<<grid(total), kThreads, 0, stream>>>(
        static_cast<const __nv_bfloat162*>(x), static_cast<const __nv_bfloat162*>(y),
        static_cast<__nv_bfloat162*>(out), reinterpret_cast<const float2*>(gate),
        static_cast<const __nv_bfloat162*>(bias), total, dim / 2, rows_per_group, group_stride / 2);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// --- RMSNorm (+ RoPE) -------------------------------------------------------------------------
// rms_norm: (x * rstd) rounded to bf16, then times the weight, rounded again; the rotation of
// (a, b) by (cos, sin) in fp32 and rounded once. A deferred projection bias is added to x first
// and rounded, as the GEMM's epilogue would have.

__global__ void __launch_bounds__(kRowThreads)
    rms_norm_rope_v8_kernel(const __nv_bfloat16* __restrict__ x, std::int64_t x_row_stride,
                            __nv_bfloat16* __restrict__ out, const __nv_bfloat16* __restrict__ weight,
                            const __nv_bfloat16* __restrict__ bias, const float* __restrict__ freqs,
                            std::int64_t dim, std::int64_t tokens, std::int64_t head_dim, float eps) {
  __shared__ float scratch[33];
  const std::int64_t r = blockIdx.x;
  const std::int64_t vectors = dim / 8;
  float v[kMaxVectors][8];
  // The sum of squares is of x + bias where there is a bias (add_bias_row), of x otherwise.
  float sum = load_row(x + r * x_row_stride, vectors, v,
                       [bias](float a) { return bias == nullptr ? a * a : 0.0F; });
  if (bias != nullptr) sum = add_bias_row(bias, vectors, v);
  const float rstd = rsqrtf(block_sum(sum, scratch) / static_cast<float>(dim) + eps);
  // freqs [tokens, head_dim / 2] complex64 = (cos, sin) float pairs: head_dim floats per token.
  const float* f = freqs == nullptr ? nullptr : freqs + (r % tokens) * head_dim;
#pragma unroll
  for (int i = 0; i < kMaxVectors; ++i) {
    const std::int64_t c = threadIdx.x + i * kRowThreads;
    if (c < vectors) {
      float w[8];
      load8(weight + c * 8, w);
#pragma unroll
      for (int j = 0; j < 8; ++j) v[i][j] = round_bf16(round_bf16(v[i][j] * rstd) * w[j]);
      if (f != nullptr) {
        float cs[8];  // 4 (cos, sin) pairs for the 4 element pairs of this vector
        load8(f + (c * 8) % head_dim, cs);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const float a = v[i][2 * j];
          const float b = v[i][2 * j + 1];
          v[i][2 * j] = a * cs[2 * j] - b * cs[2 * j + 1];
          v[i][2 * j + 1] = a * cs[2 * j + 1] + b * cs[2 * j];
        }
      }
      store8(out + r * dim + c * 8, v[i]);
    }
  }
}

__device__ __forceinline__ float2 load_pair(const __nv_bfloat162* x, const __nv_bfloat162* bias,
                                            std::int64_t p) {
  float2 v = __bfloat1622float2(x[p]);
  if (bias != nullptr) {
    const float2 d = __bfloat1622float2(bias[p]);
    v = make_float2(round_bf16(v.x + d.x), round_bf16(v.y + d.y));
  }
  return v;
}

__global__ void rms_norm_rope_pairs_kernel(const __nv_bfloat162* __restrict__ x,
                                           std::int64_t x_row_stride2,
                                           __nv_bfloat162* __restrict__ out,
                                           const __nv_bfloat162* __restrict__ weight,
                                           const __nv_bfloat162* __restrict__ bias,
                                           const float2* __restrict__ freqs, std::int64_t pairs,
                                           std::int64_t tokens, std::int64_t head_pairs, float eps) {
  __shared__ float scratch[33];
  const std::int64_t r = blockIdx.x;
  const __nv_bfloat162* xr = x + r * x_row_stride2;
  float sum = 0.0F;
  for (std::int64_t p = threadIdx.x; p < pairs; p += blockDim.x) {
    const float2 v = load_pair(xr, bias, p);
    sum += v.x * v.x + v.y * v.y;
  }
  const float rstd = rsqrtf(block_sum(sum, scratch) / static_cast<float>(2 * pairs) + eps);
  const float2* f = freqs == nullptr ? nullptr : freqs + (r % tokens) * head_pairs;
  __nv_bfloat162* o = out + r * pairs;
  for (std::int64_t p = threadIdx.x; p < pairs; p += blockDim.x) {
    const float2 v = load_pair(xr, bias, p);
    const float2 w = __bfloat1622float2(weight[p]);
    float a = round_bf16(round_bf16(v.x * rstd) * w.x);
    float b = round_bf16(round_bf16(v.y * rstd) * w.y);
    if (f != nullptr) {
      const float2 c = f[p % head_pairs];  // (cos, sin)
      const float re = a * c.x - b * c.y;
      const float im = a * c.y + b * c.x;
      a = re;
      b = im;
    }
    o[p] = __floats2bfloat162_rn(a, b);
  }
}

void launch_rms_norm_rope(const void* x, std::int64_t x_row_stride, void* out, const void* weight,
                          const void* bias, const float* freqs, std::int64_t rows, std::int64_t dim,
                          std::int64_t tokens, std::int64_t head_dim, float eps) {
  if (rows == 0) return;
  const auto stream = c10::cuda::getCurrentCUDAStream();
  const auto grid = static_cast<unsigned>(rows);
  if (dim % 8 == 0 && dim <= 8 * kRowThreads * kMaxVectors && x_row_stride % 8 == 0 &&
      head_dim % 8 == 0 && aligned16(x) && aligned16(out) && aligned16(weight) &&
      (bias == nullptr || aligned16(bias)) && (freqs == nullptr || aligned16(freqs))) {
    rms_norm_rope_v8_kernel<<<grid, kRowThreads, 0, stream>>>(
        static_cast<const __nv_bfloat16*>(x), x_row_stride, static_cast<__nv_bfloat16*>(out),
        static_cast<const __nv_bfloat16*>(weight), static_cast<const __nv_bfloat16*>(bias), freqs,
        dim, tokens, head_dim, eps);
  } else {
    rms_norm_rope_pairs_kernel<<<grid, kThreads, 0, stream>>>(
        static_cast<const __nv_bfloat162*>(x), x_row_stride / 2, static_cast<__nv_bfloat162*>(out),
        static_cast<const __nv_bfloat162*>(weight), static_cast<const __nv_bfloat162*>(bias),
        reinterpret_cast<const float2*>(freqs), dim / 2, tokens, head_dim / 2, eps);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// --- channel RMSNorm (+ SiLU): the Wan VAE, channels-last ------------------------------------
// One warp per row of up to kWarpRowVectors * 32 vectors (1024 channels), kWarpRows rows per
// block: the VAE's rows (96 to 1024 channels) are too short for a block each.

constexpr int kWarpRows = 8;
constexpr int kWarpRowVectors = 4;

template <bool kSilu>
__global__ void __launch_bounds__(kWarpRows * 32)
    channel_rms_norm_kernel(const __nv_bfloat16* __restrict__ x, __nv_bfloat16* __restrict__ out,
                            const __nv_bfloat16* __restrict__ gamma,
                            const __nv_bfloat16* __restrict__ bias, std::int64_t rows,
                            std::int64_t dim, float scale) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * kWarpRows + (threadIdx.x >> 5);
  if (r >= rows) return;  // whole warps leave together: no shuffle below misses a lane
  const std::int64_t vectors = dim / 8;
  const __nv_bfloat16* xr = x + r * dim;
  float v[kWarpRowVectors][8];
  float sum = 0.0F;
#pragma unroll
  for (int i = 0; i < kWarpRowVectors; ++i) {
    const std::int64_t c = lane + i * 32;
    if (c < vectors) {
      load8(xr + c * 8, v[i]);
      if (bias != nullptr) {
        float d[8];
        load8(bias + c * 8, d);
#pragma unroll
        for (int j = 0; j < 8; ++j) v[i][j] = round_bf16(v[i][j] + d[j]);
      }
#pragma unroll
      for (int j = 0; j < 8; ++j) sum += v[i][j] * v[i][j];
    }
  }
  const float f = round_bf16(scale / fmaxf(sqrtf(warp_sum(sum)), 1e-12F));
#pragma unroll
  for (int i = 0; i < kWarpRowVectors; ++i) {
    const std::int64_t c = lane + i * 32;
    if (c < vectors) {
      float g[8];
      load8(gamma + c * 8, g);
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        float y = round_bf16(round_bf16(v[i][j] * f) * g[j]);
        if constexpr (kSilu) y = y / (1.0F + expf(-y));
        v[i][j] = y;
      }
      store8(out + r * dim + c * 8, v[i]);
    }
  }
}

bool launch_channel_rms_norm(const void* x, void* out, const void* gamma, const void* bias,
                             std::int64_t rows, std::int64_t dim, float scale, bool silu) {
  if (dim % 8 != 0 || dim > 8 * 32 * kWarpRowVectors || !aligned16(x) || !aligned16(out) ||
      !aligned16(gamma) || (bias != nullptr && !aligned16(bias))) {
    return false;
  }
  if (rows == 0) return true;
  const auto stream = c10::cuda::getCurrentCUDAStream();
  const auto grid = static_cast<unsigned>((rows + kWarpRows - 1) / kWarpRows);
  const auto* xb = static_cast<const __nv_bfloat16*>(x);
  auto* ob = static_cast<__nv_bfloat16*>(out);
  const auto* gb = static_cast<const __nv_bfloat16*>(gamma);
  const auto* bb = static_cast<const __nv_bfloat16*>(bias);
  if (silu) {
    channel_rms_norm_kernel<true>
        <<<grid, kWarpRows * 32, 0, stream>>>(xb, ob, gb, bb, rows, dim, scale);
  } else {
    channel_rms_norm_kernel<false>
        <<<grid, kWarpRows * 32, 0, stream>>>(xb, ob, gb, bb, rows, dim, scale);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

// One block per row: the row's amax (first pass), then the scaled, saturated e4m3 values
// (second pass, from L2), 8 elements per 16-byte load and 8-byte store.
__global__ void __launch_bounds__(kRowThreads)
    quantize_rows_fp8_kernel(const __nv_bfloat16* __restrict__ x, std::uint8_t* __restrict__ q,
                             float* __restrict__ scale, std::int64_t dim) {
  __shared__ float scratch[33];
  const auto r = static_cast<std::int64_t>(blockIdx.x);
  const __nv_bfloat16* row = x + r * dim;
  std::uint8_t* out = q + r * dim;
  const std::int64_t vectors = dim / 8;
  float m = 0.0F;
  for (std::int64_t c = threadIdx.x; c < vectors; c += blockDim.x) {
    float v[8];
    load8(row + c * 8, v);
#pragma unroll
    for (int i = 0; i < 8; ++i) m = fmaxf(m, fabsf(v[i]));
  }
  // Block max through the sum's scratch layout.
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  for (int offset = 16; offset > 0; offset >>= 1)
    m = fmaxf(m, __shfl_xor_sync(0xffffffffU, m, offset));
  if (lane == 0) scratch[warp] = m;
  __syncthreads();
  if (warp == 0) {
    const int warps = static_cast<int>((blockDim.x + 31) / 32);
    m = lane < warps ? scratch[lane] : 0.0F;
    for (int offset = 16; offset > 0; offset >>= 1)
      m = fmaxf(m, __shfl_xor_sync(0xffffffffU, m, offset));
    if (lane == 0) scratch[32] = m;
  }
  __syncthreads();
  const float amax = fmaxf(scratch[32], 1e-12F);
  const float inv = 448.0F / amax;
  for (std::int64_t c = threadIdx.x; c < vectors; c += blockDim.x) {
    float v[8];
    load8(row + c * 8, v);
    const __nv_fp8x4_e4m3 lo(make_float4(v[0] * inv, v[1] * inv, v[2] * inv, v[3] * inv));
    const __nv_fp8x4_e4m3 hi(make_float4(v[4] * inv, v[5] * inv, v[6] * inv, v[7] * inv));
    uint2 packed;
    packed.x = lo.__x;
    packed.y = hi.__x;
    *reinterpret_cast<uint2*>(out + c * 8) = packed;
  }
  if (threadIdx.x == 0) scale[r] = amax / 448.0F;
}

bool launch_quantize_rows_fp8(const void* x, void* q, float* scale, std::int64_t rows,
                              std::int64_t dim) {
  if (dim % 8 != 0 || !aligned16(x) || reinterpret_cast<std::uintptr_t>(q) % 8 != 0) return false;
  if (rows == 0) return true;
  const auto stream = c10::cuda::getCurrentCUDAStream();
  quantize_rows_fp8_kernel<<<static_cast<unsigned>(rows), kRowThreads, 0, stream>>>(
      static_cast<const __nv_bfloat16*>(x), static_cast<std::uint8_t*>(q), scale, dim);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

// --- padded-key attention correction ---------------------------------------------------------
// kCorrectionLanes lanes per (b, s, h) row, h fastest (the rows of one token are adjacent in
// memory), each lane up to kCorrectionVectors vectors of 8: head dims up to 256.

constexpr int kCorrectionLanes = 16;
constexpr int kCorrectionVectors = 2;

__global__ void __launch_bounds__(kThreads)
    padded_key_correction_kernel(const __nv_bfloat16* __restrict__ q, RowStrides qs,
                                 const __nv_bfloat16* __restrict__ k0, std::int64_t k0_b,
                                 std::int64_t k0_h, const float* __restrict__ lse, RowStrides ls,
                                 __nv_bfloat16* __restrict__ out, RowStrides os, std::int64_t rows,
                                 std::int64_t tokens, std::int64_t heads, std::int64_t head_dim,
                                 float scale, float padding) {
  const std::int64_t row =
      (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kCorrectionLanes;
  const int lane = static_cast<int>(threadIdx.x) % kCorrectionLanes;
  const bool valid = row < rows;  // no early return: every lane takes part in the shuffles
  const std::int64_t h = valid ? row % heads : 0;
  const std::int64_t s = valid ? (row / heads) % tokens : 0;
  const std::int64_t b = valid ? row / (heads * tokens) : 0;
  const std::int64_t vectors = head_dim / 8;
  float dot = 0.0F;
  if (valid) {
    const __nv_bfloat16* qr = q + b * qs.b + s * qs.s + h * qs.h;
    const __nv_bfloat16* kr = k0 + b * k0_b + h * k0_h;
#pragma unroll
    for (int i = 0; i < kCorrectionVectors; ++i) {
      const std::int64_t c = lane + i * kCorrectionLanes;
      if (c < vectors) {
        float a[8], k[8];
        load8(qr + c * 8, a);
        load8(kr + c * 8, k);
#pragma unroll
        for (int j = 0; j < 8; ++j) dot += a[j] * k[j];
      }
    }
  }
  for (int offset = kCorrectionLanes / 2; offset > 0; offset >>= 1)
    dot += __shfl_xor_sync(0xffffffffU, dot, offset, kCorrectionLanes);
  if (!valid) return;
  const float f = 1.0F / (1.0F - padding * expf(scale * dot - lse[b * ls.b + s * ls.s + h * ls.h]));
  __nv_bfloat16* orow = out + b * os.b + s * os.s + h * os.h;
#pragma unroll
  for (int i = 0; i < kCorrectionVectors; ++i) {
    const std::int64_t c = lane + i * kCorrectionLanes;
    if (c < vectors) {
      float v[8];
      load8(orow + c * 8, v);
#pragma unroll
      for (int j = 0; j < 8; ++j) v[j] *= f;
      store8(orow + c * 8, v);
    }
  }
}

bool launch_padded_key_correction(const void* q, RowStrides q_strides, const void* k0,
                                  std::int64_t k0_b, std::int64_t k0_h, const float* lse,
                                  RowStrides lse_strides, void* out, RowStrides out_strides,
                                  std::int64_t batch, std::int64_t tokens, std::int64_t heads,
                                  std::int64_t head_dim, float scale, float padding) {
  const auto rows16 = [](const void* p, RowStrides st) {
    return aligned16(p) && st.b % 8 == 0 && st.s % 8 == 0 && st.h % 8 == 0;
  };
  if (head_dim % 8 != 0 || head_dim > 8 * kCorrectionLanes * kCorrectionVectors ||
      !rows16(q, q_strides) || !rows16(out, out_strides) || !aligned16(k0) || k0_b % 8 != 0 ||
      k0_h % 8 != 0) {
    return false;
  }
  const std::int64_t rows = batch * tokens * heads;
  if (rows == 0) return true;
  const auto stream = c10::cuda::getCurrentCUDAStream();
  const std::int64_t threads = rows * kCorrectionLanes;
  const auto grid = static_cast<unsigned>((threads + kThreads - 1) / kThreads);
  padded_key_correction_kernel<<<grid, kThreads, 0, stream>>>(
      static_cast<const __nv_bfloat16*>(q), q_strides, static_cast<const __nv_bfloat16*>(k0), k0_b,
      k0_h, lse, lse_strides, static_cast<__nv_bfloat16*>(out), out_strides, rows, tokens, heads,
      head_dim, scale, padding);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

const CudaKernels kKernels{&launch_modulated_layer_norm, &launch_affine_layer_norm,
                           &launch_gated_residual,       &launch_rms_norm_rope,
                           &launch_channel_rms_norm,     &launch_quantize_rows_fp8,
                           &launch_padded_key_correction};

}  // namespace

const CudaKernels* cuda_kernels() noexcept { return &kKernels; }

double cuda_peak_allocated_gib() {
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(c10::cuda::current_device());
  return static_cast<double>(stats.allocated_bytes[0].peak) /
         (1024.0 * 1024.0 * 1024.0);  // 0: aggregate
}

void cuda_reset_peak_memory() {
  c10::cuda::CUDACachingAllocator::resetPeakStats(c10::cuda::current_device());
}

}  // namespace omnidp::models
