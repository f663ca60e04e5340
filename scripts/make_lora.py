#!/usr/bin/env python3
"""A LoRA file of seeded random values for a Wan transformer, in the LightX2V / Kohya layout
(`diffusion_model.blocks.N.<self_attn|cross_attn>.<q|k|v|o>` and `ffn.<0|2>`, `lora_down` /
`lora_up` bf16, an `alpha` per module): the shape of Wan2.2-Lightning's HIGH/LOW files, for
benchmarks and checks at the released width without downloading them.

  python3 scripts/make_lora.py --blocks 40 --dim 5120 --ffn 13824 --rank 64 --seed 1 --out high.safetensors
"""
import argparse

import torch
from safetensors.torch import save_file


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--blocks", type=int, required=True)
    p.add_argument("--dim", type=int, default=5120)
    p.add_argument("--ffn", type=int, default=13824)
    p.add_argument("--rank", type=int, default=64)
    p.add_argument("--alpha", type=float, help="default: the rank (scale 1, as Lightning's)")
    p.add_argument("--gain", type=float, default=0.5, help="|B A| relative to a 1/sqrt(in) weight")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    g = torch.Generator().manual_seed(a.seed)
    sd = {}
    shapes = [(f"{attn}.{o}", a.dim, a.dim) for attn in ("self_attn", "cross_attn") for o in "qkvo"]
    shapes += [("ffn.0", a.ffn, a.dim), ("ffn.2", a.dim, a.ffn)]
    for i in range(a.blocks):
        for name, out_f, in_f in shapes:
            key = f"diffusion_model.blocks.{i}.{name}"
            sd[key + ".lora_down.weight"] = (torch.randn(a.rank, in_f, generator=g) * a.gain / in_f ** 0.5).bfloat16()
            sd[key + ".lora_up.weight"] = (torch.randn(out_f, a.rank, generator=g) / a.rank ** 0.5).bfloat16()
            sd[key + ".alpha"] = torch.tensor(float(a.alpha if a.alpha is not None else a.rank))
    save_file(sd, a.out)
    print(f"wrote {a.out}: {len(sd)} tensors, rank {a.rank}, {a.blocks} blocks")


if __name__ == "__main__":
    main()
