// Fused bf16 kernels of the transformer hot path (contracts: omnidp/models/layers/cuda_kernels.hpp).
// One block per row for the row reductions (LayerNorm, RMSNorm), a grid-stride loop for the
// elementwise residual; bf16 pairs per thread (128-byte warp accesses), fp32 arithmetic, the
// same roundings as the libtorch expressions they replace.
#include "omnidp/models/layers/cuda_kernels.hpp"

#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_bf16.h>

#include <algorithm>

namespace omnidp::models {
namespace {

constexpr int kThreads = 256;

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

__device__ __forceinline__ float round_bf16(float v) { return __bfloat162float(__float2bfloat16(v)); }

__global__ void modulated_layer_norm_kernel(const __nv_bfloat162* __restrict__ x,
                                            __nv_bfloat162* __restrict__ out,
                                            const float2* __restrict__ shift,
                                            const float2* __restrict__ scale1p, std::int64_t pairs,
                                            std::int64_t rows_per_group, std::int64_t group_stride2,
                                            float eps) {
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
  const float2* sh = shift + g * group_stride2;
  const float2* sc = scale1p + g * group_stride2;
  __nv_bfloat162* o = out + r * pairs;
  for (std::int64_t p = threadIdx.x; p < pairs; p += blockDim.x) {
    const float2 v = __bfloat1622float2(xr[p]);
    const float2 s = sh[p];
    const float2 k = sc[p];
    const float n0 = round_bf16((v.x - mean) * rstd);
    const float n1 = round_bf16((v.y - mean) * rstd);
    o[p] = __floats2bfloat162_rn(s.x + n0 * k.x, s.y + n1 * k.y);
  }
}

__global__ void gated_residual_kernel(const __nv_bfloat162* __restrict__ x,
                                      const __nv_bfloat162* __restrict__ y,
                                      __nv_bfloat162* __restrict__ out,
                                      const float2* __restrict__ gate, std::int64_t total_pairs,
                                      std::int64_t pairs, std::int64_t rows_per_group,
                                      std::int64_t group_stride2) {
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < total_pairs; i += step) {
    const std::int64_t r = i / pairs;
    const std::int64_t p = i - r * pairs;
    const float2 a = __bfloat1622float2(x[i]);
    const float2 b = __bfloat1622float2(y[i]);
    const float2 gv = gate[(r / rows_per_group) * group_stride2 + p];
    out[i] = __floats2bfloat162_rn(a.x + b.x * gv.x, a.y + b.y * gv.y);
  }
}

__global__ void rms_norm_rope_kernel(const __nv_bfloat162* __restrict__ x, std::int64_t x_row_stride2,
                                     __nv_bfloat162* __restrict__ out,
                                     const __nv_bfloat162* __restrict__ weight,
                                     const float2* __restrict__ freqs, std::int64_t pairs,
                                     std::int64_t tokens, std::int64_t head_pairs, float eps) {
  __shared__ float scratch[33];
  const std::int64_t r = blockIdx.x;
  const __nv_bfloat162* xr = x + r * x_row_stride2;
  float sum = 0.0F;
  for (std::int64_t p = threadIdx.x; p < pairs; p += blockDim.x) {
    const float2 v = __bfloat1622float2(xr[p]);
    sum += v.x * v.x + v.y * v.y;
  }
  const float rstd = rsqrtf(block_sum(sum, scratch) / static_cast<float>(2 * pairs) + eps);
  const float2* f = freqs == nullptr ? nullptr : freqs + (r % tokens) * head_pairs;
  __nv_bfloat162* o = out + r * pairs;
  for (std::int64_t p = threadIdx.x; p < pairs; p += blockDim.x) {
    const float2 v = __bfloat1622float2(xr[p]);
    const float2 w = __bfloat1622float2(weight[p]);
    // rms_norm: (x * rstd) rounded to bf16, then times the weight, rounded again.
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

void launch_modulated_layer_norm(const void* x, void* out, const float* shift, const float* scale1p,
                                 std::int64_t rows, std::int64_t dim, std::int64_t rows_per_group,
                                 std::int64_t group_stride, float eps) {
  if (rows == 0) return;
  modulated_layer_norm_kernel<<<static_cast<unsigned>(rows), kThreads, 0, c10::cuda::getCurrentCUDAStream()>>>(
      static_cast<const __nv_bfloat162*>(x), static_cast<__nv_bfloat162*>(out),
      reinterpret_cast<const float2*>(shift), reinterpret_cast<const float2*>(scale1p), dim / 2,
      rows_per_group, group_stride / 2, eps);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

void launch_gated_residual(const void* x, const void* y, void* out, const float* gate,
                           std::int64_t rows, std::int64_t dim, std::int64_t rows_per_group,
                           std::int64_t group_stride) {
  const std::int64_t total = rows * dim / 2;
  if (total == 0) return;
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((total + kThreads - 1) / kThreads, 132 * 16));
  gated_residual_kernel<<<blocks, kThreads, 0, c10::cuda::getCurrentCUDAStream()>>>(
      static_cast<const __nv_bfloat162*>(x), static_cast<const __nv_bfloat162*>(y),
      static_cast<__nv_bfloat162*>(out), reinterpret_cast<const float2*>(gate), total, dim / 2,
      rows_per_group, group_stride / 2);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

void launch_rms_norm_rope(const void* x, std::int64_t x_row_stride, void* out, const void* weight,
                          const float* freqs, std::int64_t rows, std::int64_t dim, std::int64_t tokens,
                          std::int64_t head_dim, float eps) {
  if (rows == 0) return;
  rms_norm_rope_kernel<<<static_cast<unsigned>(rows), kThreads, 0, c10::cuda::getCurrentCUDAStream()>>>(
      static_cast<const __nv_bfloat162*>(x), x_row_stride / 2, static_cast<__nv_bfloat162*>(out),
      static_cast<const __nv_bfloat162*>(weight), reinterpret_cast<const float2*>(freqs), dim / 2,
      tokens, head_dim / 2, eps);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

const CudaKernels kKernels{&launch_modulated_layer_norm, &launch_gated_residual, &launch_rms_norm_rope};

}  // namespace

const CudaKernels* cuda_kernels() noexcept { return &kKernels; }

}  // namespace omnidp::models
