#!/usr/bin/env python3
"""LoRA reference fixtures: diffusers' own `load_lora_weights` on the tiny Wan pipelines.

  PYTHONPATH=<diffusers>/src python3 scripts/lora_fixtures.py --ref tests/fixtures/diffusers-ref \
      --out tests/fixtures/diffusers-ref

Needs diffusers' PEFT backend (`peft`). Reuses the tiny models that scripts/wan_family_fixtures.py
wrote (`wan21_transformer`, `wan21_transformer_2`, `wan21_vae` under --ref) and writes one folder
per case in the same layout (`case.json`, `io.safetensors`) plus the adapter files the case
loads, in the shared formats users have:
  - Diffusers / PEFT: `transformer.<module>.lora_A.weight`, `lora_B.weight`, `lora_B.bias`;
  - Kohya / ComfyUI (the original Wan names under `diffusion_model.`): `lora_down` /
    `lora_up` + `.alpha`, `.diff_b` bias deltas; the LightX2V Lightning HIGH/LOW pair;
  - musubi-tuner: `lora_unet_blocks_N_self_attn_q.lora_down.weight` + `.alpha`.
Every adapter value is bf16-exact (the files store bf16), so a float32 read reproduces it.
Runs in float32 on the CPU with TF32 off. case.json's "lora" lists what the case loads:
{"file", "scale", "expert"}; the video is diffusers' with those adapters active (PEFT's
unfused forward, W x + scale * B(A x)), final_latents the latents after the last step.
"""
import argparse
import os

import torch

# The fixture layout, the reference scheduler (UniPC, flow shift 3) and the pipeline runner of
# the Wan family's fixtures, which these cases extend.
from wan_family_fixtures import FLOW_SHIFT, run_pipeline, save_case, scheduler

STEPS = 6
HEIGHT, WIDTH, FRAMES = 32, 48, 9
DIM, FFN, BLOCKS = 64, 128, 2  # the tiny transformer of wan_family_fixtures.py

# (original Wan name, Diffusers name) of the block linear layers LoRAs train.
SELF = [("q", "to_q"), ("k", "to_k"), ("v", "to_v"), ("o", "to_out.0")]
FFN_NAMES = [("ffn.0", "net.0.proj", (FFN, DIM)), ("ffn.2", "net.2", (DIM, FFN))]


def bf16(t):
    return t.to(torch.bfloat16)


def low_rank(g, out_f, in_f, rank, gain):
    a = torch.randn(rank, in_f, generator=g) * gain / in_f ** 0.5
    b = torch.randn(out_f, rank, generator=g) * gain / rank ** 0.5
    return bf16(a), bf16(b)


def peft_file(g, rank):
    """Diffusers/PEFT keys: attn1, attn2, FFN of every block, time_proj and proj_out; a
    lora_B.bias on attn1.to_out.0 and ffn.net.2 (PEFT's lora_bias)."""
    sd = {}
    for i in range(BLOCKS):
        for attn in ("attn1", "attn2"):
            for _, c in SELF:
                a, b = low_rank(g, DIM, DIM, rank, 0.5)
                sd[f"transformer.blocks.{i}.{attn}.{c}.lora_A.weight"] = a
                sd[f"transformer.blocks.{i}.{attn}.{c}.lora_B.weight"] = b
        for _, c, (o, n) in FFN_NAMES:
            a, b = low_rank(g, o, n, rank, 0.5)
            sd[f"transformer.blocks.{i}.ffn.{c}.lora_A.weight"] = a
            sd[f"transformer.blocks.{i}.ffn.{c}.lora_B.weight"] = b
        for c, n in (("attn1.to_out.0", DIM), ("ffn.net.2", DIM)):
            sd[f"transformer.blocks.{i}.{c}.lora_B.bias"] = bf16(torch.randn(n, generator=g) * 0.05)
    a, b = low_rank(g, 6 * DIM, DIM, rank, 0.3)
    sd["transformer.condition_embedder.time_proj.lora_A.weight"] = a
    sd["transformer.condition_embedder.time_proj.lora_B.weight"] = b
    # Every layer of the file has a bias when any has one (PEFT's lora_bias is per adapter).
    sd["transformer.condition_embedder.time_proj.lora_B.bias"] = bf16(torch.zeros(6 * DIM))
    for i in range(BLOCKS):
        for attn in ("attn1", "attn2"):
            for _, c in SELF:
                sd.setdefault(f"transformer.blocks.{i}.{attn}.{c}.lora_B.bias", bf16(torch.zeros(DIM)))
        sd.setdefault(f"transformer.blocks.{i}.ffn.net.0.proj.lora_B.bias", bf16(torch.zeros(FFN)))
    return sd


def kohya_file(g, rank, alpha, lora_names=("lora_down", "lora_up"), diff_b=True):
    """The original Wan names under `diffusion_model.`, with `.alpha` (LightX2V's and
    ComfyUI's layout) and, optionally, `.diff_b` bias deltas of self-attention's output."""
    down, up = lora_names
    sd = {}
    for i in range(BLOCKS):
        for attn in ("self_attn", "cross_attn"):
            for o, _ in SELF:
                a, b = low_rank(g, DIM, DIM, rank, 0.5)
                p = f"diffusion_model.blocks.{i}.{attn}.{o}"
                sd[f"{p}.{down}.weight"], sd[f"{p}.{up}.weight"] = a, b
                sd[f"{p}.alpha"] = torch.tensor(float(alpha))
        for o, _, (out_f, in_f) in FFN_NAMES:
            a, b = low_rank(g, out_f, in_f, rank, 0.5)
            p = f"diffusion_model.blocks.{i}.{o}"
            sd[f"{p}.{down}.weight"], sd[f"{p}.{up}.weight"] = a, b
            sd[f"{p}.alpha"] = torch.tensor(float(alpha))
        if diff_b:  # PEFT's lora_bias is per adapter: every layer of the file then has one
            for attn in ("self_attn", "cross_attn"):
                for o, _ in SELF:
                    scale = 0.05 if (attn, o) == ("self_attn", "o") else 0.0
                    sd[f"diffusion_model.blocks.{i}.{attn}.{o}.diff_b"] = bf16(torch.randn(DIM, generator=g) * scale)
            for o, _, (out_f, _) in FFN_NAMES:
                sd[f"diffusion_model.blocks.{i}.{o}.diff_b"] = bf16(torch.zeros(out_f))
    return sd


def musubi_file(g, rank, alpha):
    sd = {}
    for i in range(BLOCKS):
        for attn in ("self_attn", "cross_attn"):
            for o, _ in SELF:
                a, b = low_rank(g, DIM, DIM, rank, 0.5)
                p = f"lora_unet_blocks_{i}_{attn}_{o}"
                sd[f"{p}.lora_down.weight"], sd[f"{p}.lora_up.weight"] = a, b
                sd[f"{p}.alpha"] = torch.tensor(float(alpha))
        for o, (out_f, in_f) in (("ffn_0", (FFN, DIM)), ("ffn_2", (DIM, FFN))):
            a, b = low_rank(g, out_f, in_f, rank, 0.5)
            p = f"lora_unet_blocks_{i}_{o}"
            sd[f"{p}.lora_down.weight"], sd[f"{p}.lora_up.weight"] = a, b
            sd[f"{p}.alpha"] = torch.tensor(float(alpha))
    return sd


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", required=True, help="folder with wan21_transformer(_2), wan21_vae")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    from safetensors.torch import save_file
    from diffusers import AutoencoderKLWan, WanPipeline, WanTransformer3DModel
    note = ("diffusers load_lora_weights (PEFT, unfused) float32 on the CPU, TF32 off; adapter "
            "values bf16-exact (scripts/lora_fixtures.py)")

    def load(name):
        cls = AutoencoderKLWan if name.endswith("vae") else WanTransformer3DModel
        return cls.from_pretrained(os.path.join(args.ref, name), torch_dtype=torch.float32).eval()

    g = torch.Generator().manual_seed(53)
    files = {
        "peft.safetensors": peft_file(g, 4),
        "kohya.safetensors": kohya_file(g, 4, 2.0),
        "kohya_ab.safetensors": kohya_file(g, 8, 4.0, ("lora_A", "lora_B"), diff_b=False),
        "musubi.safetensors": musubi_file(g, 4, 8.0),
        # A LightX2V Lightning-shaped pair: rank 8, alpha = rank, one file per expert.
        "lightning_HIGH.safetensors": kohya_file(g, 8, 8.0, diff_b=False),
        "lightning_LOW.safetensors": kohya_file(g, 8, 8.0, diff_b=False),
    }
    adapters = os.path.join(args.out, "lora_adapters")
    os.makedirs(adapters, exist_ok=True)
    for name, sd in files.items():
        save_file({k: v.contiguous() for k, v in sd.items()}, os.path.join(adapters, name))

    vae = load("wan21_vae")
    gi = torch.Generator().manual_seed(7)
    prompt = torch.randn(1, 16, 32, generator=gi)
    negative = torch.randn(1, 16, 32, generator=gi)

    def case(name, seed, lora, two_experts=False, guidance=5.0, guidance_2=None, boundary=None):
        parts = {"transformer": load("wan21_transformer")}
        if two_experts:
            parts["transformer_2"] = load("wan21_transformer_2")
        pipe = WanPipeline(tokenizer=None, text_encoder=None, vae=vae, scheduler=scheduler(),
                           boundary_ratio=boundary, expand_timesteps=False, **parts)
        pipe.set_progress_bar_config(disable=True)
        names = {"transformer": [], "transformer_2": []}
        weights = {"transformer": [], "transformer_2": []}
        for k, entry in enumerate(lora):
            adapter = f"a{k}"
            into_2 = entry["expert"] == "low_noise"
            pipe.load_lora_weights(adapters, weight_name=entry["file"], adapter_name=adapter,
                                   load_into_transformer_2=into_2)
            component = "transformer_2" if into_2 else "transformer"
            names[component].append(adapter)
            weights[component].append(entry["scale"])
        for component in names:
            if names[component]:
                getattr(pipe, component).set_adapters(names[component], weights=weights[component])
        shape = (1, 16, (FRAMES - 1) // 4 + 1, HEIGHT // 8, WIDTH // 8)
        noise = torch.randn(shape, generator=torch.Generator().manual_seed(seed))
        call = dict(prompt_embeds=prompt, negative_prompt_embeds=negative, height=HEIGHT, width=WIDTH,
                    num_frames=FRAMES, num_inference_steps=STEPS, guidance_scale=guidance,
                    latents=noise.clone())
        if guidance_2 is not None:
            call["guidance_scale_2"] = guidance_2
        with torch.no_grad():
            video, final = run_pipeline(pipe, call)
        description = {
            "pipeline": "WanPipeline(expand_timesteps=False)" +
                        (f", boundary_ratio={boundary}" if boundary else ""),
            "guidance_scale": guidance, "height": HEIGHT, "width": WIDTH, "num_frames": FRAMES,
            "steps": STEPS, "flow_shift": FLOW_SHIFT, "latents_seed": seed, "vae": "../wan21_vae",
            "transformer": "../wan21_transformer",
            "scheduler": f"UniPCMultistepScheduler(flow_prediction, use_flow_sigmas, flow_shift={FLOW_SHIFT})",
            "lora": [dict(entry, file="../lora_adapters/" + entry["file"]) for entry in lora],
            "note": note}
        if two_experts:
            description["transformer_2"] = "../wan21_transformer_2"
            description["boundary_ratio"] = boundary
        if guidance_2 is not None:
            description["guidance_scale_2"] = guidance_2
        save_case(os.path.join(args.out, name), description,
                  {"latents": noise, "prompt_embeds": prompt, "negative_prompt_embeds": negative,
                   "video": video, "final_latents": final})

    one = lambda f, s: {"file": f, "scale": s, "expert": "all"}  # noqa: E731
    case("wan_lora_peft", 1531, [one("peft.safetensors", 0.8)])
    case("wan_lora_kohya", 1532, [one("kohya.safetensors", 1.0)])
    case("wan_lora_kohya_ab", 1533, [one("kohya_ab.safetensors", 0.6)])
    case("wan_lora_musubi", 1534, [one("musubi.safetensors", 1.0)])
    case("wan_lora_stacked", 1535, [one("peft.safetensors", 0.5), one("kohya.safetensors", 1.25)])
    # Wan2.2-A14B with the Lightning pair: HIGH into the high-noise expert at 1.0, LOW into the
    # low-noise one (load_into_transformer_2) at 0.5; the boundary after the third of 6 steps.
    case("wan_lora_a14b_lightning", 1536,
         [{"file": "lightning_HIGH.safetensors", "scale": 1.0, "expert": "high_noise"},
          {"file": "lightning_LOW.safetensors", "scale": 0.5, "expert": "low_noise"}],
         two_experts=True, guidance=4.0, guidance_2=3.0, boundary=0.8035)


if __name__ == "__main__":
    main()
