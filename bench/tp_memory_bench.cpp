// omni-dp-bench-tp-memory: transformer parameters per rank under tensor parallelism
// (docs/models.md, "Tensor parallelism") for the real Wan2.2-TI2V-5B and HunyuanVideo-1.5
// 8.3B configurations at tensor_parallel_size 1, 2, 4 and 8 (where the heads divide).
//
// Counted from modules built for each shard, without building a whole model: a model with 0
// blocks and one with 1 block give the replicated part and one block's shard, and the total
// is replicated + num_layers x block. Text encoders and the VAE are replicated and left out.
//
//   omni-dp-bench-tp-memory
//
// A benchmark, never a test: one line per model and size.

#include <torch/torch.h>

#include <cstdint>
#include <cstdio>
#include <functional>

#include "omnidp/models/hv15/transformer.hpp"
#include "omnidp/models/wan/configs.hpp"
#include "omnidp/models/wan/transformer.hpp"

namespace {

using omnidp::models::TensorShard;

std::int64_t count(const torch::nn::Module& m) {
  std::int64_t n = 0;
  for (const auto& p : m.parameters(true)) n += p.numel();
  return n;
}

void report(const char* model, std::int64_t layers, std::int64_t heads,
            const std::function<std::int64_t(std::int64_t blocks, TensorShard)>& params) {
  std::int64_t whole = 0;
  for (const std::int64_t n : {1, 2, 4, 8}) {
    if (heads % n != 0) continue;
    const TensorShard shard{0, n};
    const auto base = params(0, shard);
    const auto block = params(1, shard) - base;
    const auto total = base + layers * block;
    if (n == 1) whole = total;
    std::printf(
        "%s tp %lld: %.3f G parameters per rank (replicated %.3f G, %lld blocks x %.1f M), bf16 "
        "%.2f GiB, "
        "%.2f of tp 1\n",
        model, static_cast<long long>(n), static_cast<double>(total) / 1e9,
        static_cast<double>(base) / 1e9, static_cast<long long>(layers),
        static_cast<double>(block) / 1e6,
        static_cast<double>(total) * 2.0 / (1024.0 * 1024.0 * 1024.0),
        static_cast<double>(total) / static_cast<double>(whole));
  }
}

}  // namespace

int main() {
  namespace wan = omnidp::models::wan;
  namespace hv = omnidp::models::hv15;
  const auto wan_options =
      wan::WanTransformerOptions::from_json_text(wan::wan22_ti2v_5b_transformer_config(), "5b");
  report("wan2.2-ti2v-5b", wan_options.num_layers, wan_options.num_attention_heads,
         [&](std::int64_t blocks, TensorShard shard) {
           auto o = wan_options;
           o.num_layers = blocks;
           return count(*wan::WanTransformer3DModel(o, shard));
         });
  const hv::TransformerOptions hv_options;  // the released 8.3B configuration
  report("hunyuanvideo-1.5", hv_options.num_layers, hv_options.num_attention_heads,
         [&](std::int64_t blocks, TensorShard shard) {
           auto o = hv_options;
           o.num_layers = blocks;
           return count(*hv::HunyuanVideo15Transformer3DModel(o, shard));
         });
  return 0;
}
