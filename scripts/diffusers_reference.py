#!/usr/bin/env python3
"""HunyuanVideo-1.5 and Wan through diffusers' own pipelines, to check omni-dp against the reference
on a GPU machine (docs/performance.md, "HunyuanVideo-1.5 against diffusers", "Wan from prompt
text against diffusers").

  fixtures --fixtures DIR --device cuda --dtype bf16|fp32
      runs the diffusers-ref cases hv15_pipeline_t2v / hv15_pipeline_i2v (their embeddings,
      latents, weights and configs) and prints how far diffusers itself lands from the stored
      float32 CPU outputs: the size of the error a faithful implementation makes in that dtype.
  snapshot --snapshot DIR --image PNG --prompt TEXT --seed N --frames F --steps S --out OUT.npy
      one request through the pipeline class that model_index.json names (WanPipeline,
      WanImageToVideoPipeline, HunyuanVideo15Pipeline, HunyuanVideo15ImageToVideoPipeline;
      --guidance-scale-2 for Wan2.2-A14B's second expert) from a Diffusers snapshot
      folder; writes the uint8 video [F,H,W,3] = round(255 * output_type="np"). --print-ids
      prints the ids the pipeline's tokenizer gives the prompt (Wan: after its prompt_clean).
  compare --ref OUT.npy --ours FRAMES_DIR
      the largest uint8 difference, the PSNR and the share of differing values between that
      video and omni-dp-export's PNG frames of the same request.

Needs torch, transformers and a diffusers source tree on PYTHONPATH. TF32 is off in fp32.
"""
import argparse
import json
import math
import os
import sys

import numpy as np


def level_stats(a, b):
    d = np.abs(a.astype(np.int32) - b.astype(np.int32))
    mse = float(np.mean(d.astype(np.float64) ** 2))
    psnr = math.inf if mse == 0 else 10 * math.log10(255.0 ** 2 / mse)
    return int(d.max()), psnr, float(np.mean(d > 0))


def to_uint8(video):
    return np.round(np.clip(video, 0, 1) * 255).astype(np.uint8)


def setup_torch(dtype_name):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch, {"bf16": torch.bfloat16, "fp32": torch.float32}[dtype_name]


def run_fixtures(args):
    torch, dtype = setup_torch(args.dtype)
    from safetensors.torch import load_file
    from transformers import SiglipImageProcessor, SiglipVisionModel
    from diffusers import (AutoencoderKLHunyuanVideo15, FlowMatchEulerDiscreteScheduler,
                           HunyuanVideo15ImageToVideoPipeline, HunyuanVideo15Pipeline,
                           HunyuanVideo15Transformer3DModel)
    from diffusers.guiders import ClassifierFreeGuidance
    import PIL.Image

    for name in ("hv15_pipeline_t2v", "hv15_pipeline_i2v"):
        case_dir = os.path.join(args.fixtures, "diffusers-ref", name)
        case = json.load(open(os.path.join(case_dir, "case.json")))
        io = load_file(os.path.join(case_dir, "io.safetensors"))
        rel = lambda key: os.path.normpath(os.path.join(case_dir, case[key]))
        parts = dict(
            transformer=HunyuanVideo15Transformer3DModel.from_pretrained(rel("transformer"), torch_dtype=dtype),
            vae=AutoencoderKLHunyuanVideo15.from_pretrained(rel("vae"), torch_dtype=dtype),
            scheduler=FlowMatchEulerDiscreteScheduler.from_pretrained(os.path.join(case_dir, "scheduler")),
            guider=ClassifierFreeGuidance.from_pretrained(os.path.join(case_dir, "guider")),
            text_encoder=None, tokenizer=None, text_encoder_2=None, tokenizer_2=None)
        call = {}
        if "image_encoder" in case:
            parts["image_encoder"] = SiglipVisionModel.from_pretrained(rel("image_encoder"), torch_dtype=dtype)
            parts["feature_extractor"] = SiglipImageProcessor.from_pretrained(rel("feature_extractor"))
            pipe = HunyuanVideo15ImageToVideoPipeline(**parts)
            call["image"] = PIL.Image.fromarray(io["image_rgb_uint8"].numpy().astype(np.uint8))
        else:
            pipe = HunyuanVideo15Pipeline(**parts)
            call.update(height=case["height"], width=case["width"])
        pipe.to(args.device)
        dev = lambda key: io[key].to(args.device)
        for key in ("prompt_embeds", "prompt_embeds_mask", "prompt_embeds_2", "prompt_embeds_mask_2",
                    "negative_prompt_embeds", "negative_prompt_embeds_mask", "negative_prompt_embeds_2",
                    "negative_prompt_embeds_mask_2"):
            call[key] = dev(key).to(dtype)
        run = lambda output_type: pipe(num_frames=case["num_frames"], num_inference_steps=case["steps"],
                                       latents=dev("latents").to(dtype), output_type=output_type, **call).frames
        # The same sampler twice: once to the latents (output_type="latent"), once to the video.
        latents = run("latent").float().cpu().numpy()
        video = np.asarray(run("np"))
        ref = io["video"].numpy()
        rel = lambda ours, theirs: float(np.abs(ours - theirs).max() / max(1.0, np.abs(theirs).max()))
        levels, psnr, share = level_stats(to_uint8(video), to_uint8(ref))
        print(f"{name} diffusers {args.dtype} on {args.device} vs the float32 CPU reference: "
              f"final_latents rel err {rel(latents, io['final_latents'].numpy()):.3g}, "
              f"video rel err {rel(video, ref):.3g}, max {levels} uint8 levels, PSNR {psnr:.2f} dB, "
              f"{100 * share:.2f} % of values differ")


def without_ftfy():
    """diffusers' WanImageToVideoPipeline calls ftfy.fix_text whether or not ftfy is installed
    (WanPipeline skips it without ftfy): without the package, its fix_text is the identity there
    too, as omni-dp's prompt cleaning is (docs/models.md, "The UMT5 tokenizer")."""
    try:
        import ftfy  # noqa: F401
    except ImportError:
        import types
        sys.modules["ftfy"] = types.SimpleNamespace(fix_text=lambda text: text)
        import diffusers.pipelines.wan.pipeline_wan_i2v as wan_i2v
        wan_i2v.ftfy = sys.modules["ftfy"]


def run_snapshot(args):
    torch, dtype = setup_torch(args.dtype)
    import diffusers
    import PIL.Image
    import time

    without_ftfy()
    index = json.load(open(os.path.join(args.snapshot, "model_index.json")))
    cls = getattr(diffusers, index["_class_name"])
    i2v = index["_class_name"] == "HunyuanVideo15ImageToVideoPipeline"
    wan = index["_class_name"].startswith("Wan")
    wan_i2v = index["_class_name"] == "WanImageToVideoPipeline"
    t0 = time.time()
    pipe = cls.from_pretrained(args.snapshot, torch_dtype=dtype).to(args.device)
    print(f"diffusers load {time.time() - t0:.1f} s", flush=True)
    # LoRA adapters as omni-dp's model.lora names them: FILE:SCALE:EXPERT (all | high_noise |
    # low_noise); load_lora_weights, into transformer_2 for low_noise, then set_adapters.
    names = {"transformer": [], "transformer_2": []}
    weights = {"transformer": [], "transformer_2": []}
    for k, spec in enumerate(args.lora or []):
        path, scale, expert = spec.rsplit(":", 2)
        targets = {"all": ["transformer", "transformer_2"], "high_noise": ["transformer"],
                   "low_noise": ["transformer_2"]}[expert]
        for component in targets:
            if getattr(pipe, component, None) is None:
                continue
            adapter = f"a{k}_{component}"
            pipe.load_lora_weights(os.path.dirname(os.path.abspath(path)), weight_name=os.path.basename(path),
                                   adapter_name=adapter, load_into_transformer_2=component == "transformer_2")
            names[component].append(adapter)
            weights[component].append(float(scale))
    for component, adapters in names.items():
        if adapters:
            getattr(pipe, component).set_adapters(adapters, weights=weights[component])
            print(f"diffusers: {component} adapters {adapters} at {weights[component]}", flush=True)
    prompts = args.prompt
    call = dict(num_frames=args.frames, num_inference_steps=args.steps, output_type="np")
    if args.guidance_scale is not None:
        call["guidance_scale"] = args.guidance_scale
    if args.guidance_scale_2 is not None:
        call["guidance_scale_2"] = args.guidance_scale_2
    if i2v or wan_i2v:
        call["image"] = PIL.Image.open(args.image).convert("RGB")
    if args.last_image:
        call["last_image"] = PIL.Image.open(args.last_image).convert("RGB")
    if not i2v:  # Wan's image-to-video takes the size as given (the image is resized to it)
        call.update(height=args.height, width=args.width)
    if args.print_ids:
        for text in prompts:
            if wan:
                from diffusers.pipelines.wan.pipeline_wan import prompt_clean
                text = prompt_clean(text)
            ids = pipe.tokenizer(text, max_length=512, truncation=True, add_special_tokens=True).input_ids
            print(f"{type(pipe.tokenizer).__name__} ids ({len(ids)}): {' '.join(map(str, ids))}", flush=True)
    if len(prompts) > 1 and args.dump_embeds:
        print("--dump-embeds takes one --prompt")
        return 2
    if args.dump_embeds:  # the pipeline's own encoders, as omni-dp's prompt_embeds file holds them
        from safetensors.torch import save_file
        dev = torch.device(args.device)
        names = ("prompt_embeds", "prompt_embeds_mask", "prompt_embeds_2", "prompt_embeds_mask_2")
        out = dict(zip(names, pipe.encode_prompt(prompt=prompts[0], device=dev, dtype=dtype)))
        out.update(zip(["negative_" + n for n in names], pipe.encode_prompt(prompt=None, device=dev, dtype=dtype)))
        if i2v:
            h, w = pipe.video_processor.calculate_default_height_width(
                height=call["image"].size[1], width=call["image"].size[0], target_size=pipe.target_size)
            resized = pipe.video_processor.resize(call["image"], height=h, width=w, resize_mode="crop")
            out["image_embeds"] = pipe.encode_image(image=resized, batch_size=1, device=dev, dtype=dtype)
        save_file({k: v.float().contiguous().cpu() for k, v in out.items()}, args.dump_embeds)
        print(f"wrote {args.dump_embeds}: " + ", ".join(f"{k} {list(v.shape)}" for k, v in out.items()), flush=True)
        if args.embeds_only:
            return
    for i, prompt in enumerate(prompts):
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
        t0 = time.time()
        frames = pipe(prompt=prompt, generator=torch.Generator("cpu").manual_seed(args.seed), **call).frames
        video = to_uint8(np.asarray(frames)[0])
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
        print(f"diffusers {cls.__name__} {args.dtype}: {video.shape[0]}x{video.shape[1]}x{video.shape[2]} "
              f"in {time.time() - t0:.1f} s", flush=True)
        # One prompt: --out itself; several: OUT.<i>.npy for the i-th.
        np.save(args.out if len(prompts) == 1 else args.out.replace(".npy", f".{i}.npy"), video)


def run_compare(args):
    import PIL.Image
    ref = np.load(args.ref)
    names = sorted(n for n in os.listdir(args.ours) if n.endswith(".png"))
    ours = np.stack([np.asarray(PIL.Image.open(os.path.join(args.ours, n)).convert("RGB")) for n in names])
    if ours.shape != ref.shape:
        print(f"shape mismatch: omni-dp {ours.shape}, diffusers {ref.shape}")
        return 1
    levels, psnr, share = level_stats(ours, ref)
    print(f"omni-dp vs diffusers {'x'.join(map(str, ref.shape[:3]))}: max {levels} uint8 levels, "
          f"PSNR {psnr:.2f} dB, {100 * share:.3f} % of values differ")
    return 0 if levels <= args.max_level_diff else 1


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fixtures")
    f.add_argument("--fixtures", required=True)
    f.add_argument("--device", default="cuda")
    f.add_argument("--dtype", choices=["bf16", "fp32"], default="fp32")
    s = sub.add_parser("snapshot")
    s.add_argument("--snapshot", required=True)
    s.add_argument("--image")
    s.add_argument("--prompt", required=True, action="append", help="repeat for several requests")
    s.add_argument("--seed", type=int, required=True)
    s.add_argument("--frames", type=int, required=True)
    s.add_argument("--steps", type=int, required=True)
    s.add_argument("--height", type=int, default=480)
    s.add_argument("--width", type=int, default=848)
    s.add_argument("--device", default="cuda")
    s.add_argument("--dtype", choices=["bf16", "fp32"], default="fp32")
    s.add_argument("--out", required=True)
    s.add_argument("--guidance-scale", type=float, help="the pipeline's default when left out")
    s.add_argument("--guidance-scale-2", type=float, help="Wan2.2-A14B: the low-noise expert's")
    s.add_argument("--last-image", help="WanImageToVideoPipeline: first-last-frame to video")
    s.add_argument("--lora", action="append", help="FILE:SCALE:EXPERT (all | high_noise | low_noise); repeat")
    s.add_argument("--print-ids", action="store_true", help="print the tokenizer's ids of the prompt")
    s.add_argument("--dump-embeds", help="(HunyuanVideo-1.5) also write the encoders' outputs (omni-dp's prompt_embeds layout)")
    s.add_argument("--embeds-only", action="store_true", help="with --dump-embeds: stop after the encoders")
    c = sub.add_parser("compare")
    c.add_argument("--ref", required=True)
    c.add_argument("--ours", required=True)
    c.add_argument("--max-level-diff", type=int, default=1)
    args = p.parse_args()
    return {"fixtures": run_fixtures, "snapshot": run_snapshot, "compare": run_compare}[args.cmd](args) or 0


if __name__ == "__main__":
    sys.exit(main())
