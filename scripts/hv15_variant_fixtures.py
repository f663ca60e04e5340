#!/usr/bin/env python3
"""Reference fixtures for HunyuanVideo-1.5's released variants (the cfg-distilled checkpoints
and the step-distilled MeanFlow I2V) from diffusers' own classes, at the tiny configurations of
the shared set.

  PYTHONPATH=<diffusers>/src python3 scripts/hv15_variant_fixtures.py --out tests/fixtures/diffusers-ref

Writes one folder per case in the layout of ../shared/fixtures/diffusers-ref (README.md there;
the same `case.json` keys as hv15_pipeline_t2v / hv15_pipeline_i2v, so that the same runners
read them): `case.json`, `io.safetensors` (float32 inputs and outputs), `guider/` and
`scheduler/` as `save_pretrained` writes them. Everything runs in float32 on the CPU with TF32
off, so the outputs do not depend on the machine.

The models are the shared set's (`hv15_transformer`, `hv15_transformer_i2v`, `hv15_vae_encode`,
`siglip_vision`, found in --shared, default $OMNIDP_FIXTURES_DIR, else <checkout>/shared/fixtures,
else <checkout>/../shared/fixtures), so that the repository keeps only a few hundred kB:

  hv15_pipeline_cfg_distilled     HunyuanVideo15Pipeline, guider ClassifierFreeGuidance(1.0) as the
                                  cfg-distilled checkpoints ship it: one transformer call per step and
                                  no negative prompt encoded (there is no text encoder here, so an
                                  attempt to encode one would raise).
  hv15_transformer_meanflow_i2v   hv15_transformer_i2v with `use_meanflow: true`: its weights plus
                                  time_embed.timestep_embedder_r (bf16-exact, seeded), stored as two
                                  shards: shard 1 is the shared hv15_transformer_i2v file unchanged
                                  (`transformer_shard_1` in case.json), shard 2 holds the new tensors.
                                  io.safetensors: one forward with `timestep_r`.
  hv15_pipeline_meanflow_i2v      HunyuanVideo15ImageToVideoPipeline with that transformer: diffusers
                                  passes timestep_r = the next timestep (0 at the last step).

Every pipeline case also records what the transformer received on each call (`call_timestep`,
`call_timestep_r`, `call_batch` in io.safetensors; `transformer_calls` in case.json).
Needs torch, transformers (4.5x or 5.x), safetensors, numpy, Pillow and a diffusers source tree.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

from wan_family_fixtures import save_case  # the fixture layout (case.json, io.safetensors)

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKOUT = os.path.dirname(HERE)
NOTE = ("diffusers float32 on the CPU, TF32 off; weights bf16-exact "
        "(scripts/hv15_variant_fixtures.py)")
SHARD_1 = "diffusion_pytorch_model-00001-of-00002.safetensors"
SHARD_2 = "diffusion_pytorch_model-00002-of-00002.safetensors"
INDEX = "diffusion_pytorch_model.safetensors.index.json"


def find_shared(explicit):
    candidates = [explicit] if explicit else [
        os.environ.get("OMNIDP_FIXTURES_DIR") or None,
        os.path.join(CHECKOUT, "shared", "fixtures"),
        os.path.join(CHECKOUT, "..", "shared", "fixtures"),
    ]
    need = ("hv15_transformer", "hv15_transformer_i2v", "hv15_vae_encode", "siglip_vision")
    for c in candidates:
        if c and all(os.path.isdir(os.path.join(c, "diffusers-ref", n)) for n in need):
            return os.path.abspath(c)
    sys.exit("hv15_variant_fixtures.py: the shared fixtures (diffusers-ref/" + ", ".join(need) +
             ") were not found in " + ", ".join(repr(c) for c in candidates if c) +
             "; pass --shared /path/to/fixtures")


def bf16_exact_(params, seed):
    """Seeded values for the given parameters, rounded to bf16 (as the shared set's models)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in params:
            if p.dim() <= 1:
                base = 1.0 if name.endswith("norm.weight") else 0.0
                p.copy_(base + 0.1 * torch.randn(p.shape, generator=g))
            else:
                bound = 1.0 / max(1, p.shape[1]) ** 0.5
                p.copy_((torch.rand(p.shape, generator=g) * 2 - 1) * bound)
            p.copy_(p.to(torch.bfloat16).to(torch.float32))


def load_diffusers(cls, folder):
    model = cls.from_pretrained(folder, torch_dtype=torch.float32)
    return model.to(torch.float32).eval()


def load_transformers(cls, folder):
    try:  # transformers 5.x names it dtype (and defaults to the stored dtype)
        model = cls.from_pretrained(folder, dtype=torch.float32)
    except TypeError:
        model = cls.from_pretrained(folder, torch_dtype=torch.float32)
    return model.to(torch.float32).eval()


def text_inputs(seed, embed_dim=48, embed_2_dim=40, length=16, length_2=6, pad=3, pad_2=2):
    """prompt_embeds (Qwen stream) and prompt_embeds_2 (byT5 stream) with their masks: the last
    `pad` / `pad_2` tokens are padding, as the shared pipeline cases."""
    g = torch.Generator().manual_seed(seed)
    embeds = torch.randn(1, length, embed_dim, generator=g)
    embeds_2 = torch.randn(1, length_2, embed_2_dim, generator=g)
    mask = torch.ones(1, length)
    mask[:, length - pad:] = 0
    mask_2 = torch.ones(1, length_2)
    mask_2[:, length_2 - pad_2:] = 0
    return {"prompt_embeds": embeds, "prompt_embeds_mask": mask, "prompt_embeds_2": embeds_2,
            "prompt_embeds_mask_2": mask_2}


def rgb(seed, h, w):
    g = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    img = np.stack([x * 255 / w, y * 255 / h, (x + y) * 127 / (h + w)], -1)
    img = np.clip(img + g.normal(0, 20, img.shape), 0, 255)
    return img.astype(np.uint8)


class CallRecorder:
    """What the transformer receives on each call: timestep, timestep_r, batch."""

    def __init__(self, transformer):
        self.calls = []
        transformer.register_forward_pre_hook(self.hook, with_kwargs=True)

    def hook(self, _module, args, kwargs):
        t = kwargs.get("timestep")
        r = kwargs.get("timestep_r")
        hidden = kwargs.get("hidden_states", args[0] if args else None)
        self.calls.append((t.detach().float().clone(), None if r is None else r.detach().float().clone(),
                           int(hidden.shape[0])))

    def tensors(self):
        ts = torch.stack([c[0].reshape(-1)[0] for c in self.calls])
        # -1 where no timestep_r was passed (diffusers passes None without use_meanflow).
        rs = torch.stack([c[1].reshape(-1)[0] if c[1] is not None else torch.tensor(-1.0)
                          for c in self.calls])
        for c in self.calls:  # every entry of a batch gets the same values
            assert torch.all(c[0] == c[0].reshape(-1)[0])
            assert c[1] is None or (c[1].numel() == c[2] and torch.all(c[1] == c[1].reshape(-1)[0]))
        batch = torch.tensor([float(c[2]) for c in self.calls])
        return {"call_timestep": ts, "call_timestep_r": rs, "call_batch": batch}


def run_pipeline(pipe, recorder, call, latents):
    """The sampler twice from the same noise: to the latents, then to the video (as
    scripts/diffusers_reference.py); the recorder keeps the second run's calls."""
    with torch.no_grad():
        final = pipe(latents=latents.clone(), output_type="latent", **call).frames
        recorder.calls.clear()
        video = pipe(latents=latents.clone(), output_type="np", **call).frames
    return final.float(), torch.from_numpy(np.asarray(video)).float()


def write_components(folder, guider, scheduler):
    guider.save_pretrained(os.path.join(folder, "guider"))
    scheduler.save_pretrained(os.path.join(folder, "scheduler"))


def schedule(shift, steps):
    from diffusers import FlowMatchEulerDiscreteScheduler
    s = FlowMatchEulerDiscreteScheduler(shift=shift)
    s.set_timesteps(sigmas=np.linspace(1.0, 0.0, steps + 1)[:-1])
    return [float(t) for t in s.timesteps]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="the folder that receives the case folders "
                        "(tests/fixtures/diffusers-ref)")
    parser.add_argument("--shared", help="the shared fixtures folder (holding diffusers-ref/)")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    import PIL.Image
    from safetensors.torch import load_file, save_file
    from transformers import SiglipImageProcessor, SiglipVisionModel
    from diffusers import (AutoencoderKLHunyuanVideo15, FlowMatchEulerDiscreteScheduler,
                           HunyuanVideo15ImageToVideoPipeline, HunyuanVideo15Pipeline,
                           HunyuanVideo15Transformer3DModel)
    from diffusers.guiders import ClassifierFreeGuidance

    shared = os.path.join(find_shared(args.shared), "diffusers-ref")
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    vae = load_diffusers(AutoencoderKLHunyuanVideo15, os.path.join(shared, "hv15_vae_encode"))
    text_parts = dict(text_encoder=None, tokenizer=None, text_encoder_2=None, tokenizer_2=None)

    # --- cfg-distilled text-to-video: guider scale 1 (the 480p/720p *_distilled checkpoints).
    t2v = load_diffusers(HunyuanVideo15Transformer3DModel, os.path.join(shared, "hv15_transformer"))
    steps, shift, seed, height, width, frames = 4, 5.0, 1236, 64, 96, 9
    guider = ClassifierFreeGuidance(guidance_scale=1.0)
    scheduler = FlowMatchEulerDiscreteScheduler(shift=shift)
    pipe = HunyuanVideo15Pipeline(transformer=t2v, vae=vae, scheduler=scheduler, guider=guider,
                                  **text_parts)
    pipe.set_progress_bar_config(disable=True)
    recorder = CallRecorder(t2v)
    text = text_inputs(2001)
    shape = (1, 32, (frames - 1) // 4 + 1, height // 16, width // 16)
    noise = torch.randn(shape, generator=torch.Generator().manual_seed(seed))
    # No negative_prompt_embeds: with guidance 1 diffusers does not encode one (without text
    # encoders an attempt would raise).
    call = dict(height=height, width=width, num_frames=frames, num_inference_steps=steps, **text)
    final, video = run_pipeline(pipe, recorder, call, noise)
    folder = os.path.join(out, "hv15_pipeline_cfg_distilled")
    calls = recorder.tensors()
    assert len(recorder.calls) == steps and all(c[2] == 1 for c in recorder.calls), recorder.calls
    save_case(folder, {
        "pipeline": "HunyuanVideo15Pipeline (text-to-video, cfg-distilled: guider guidance_scale 1)",
        "guidance_scale": 1.0, "flow_shift": shift, "height": height, "width": width,
        "num_frames": frames, "steps": steps, "latents_seed": seed,
        "transformer": "../hv15_transformer", "vae": "../hv15_vae_encode",
        "transformer_calls": len(recorder.calls), "negative_prompt_encoded": False,
        "timesteps": schedule(shift, steps),
        "note": "embeddings given, no negative (the guider has one condition); video is "
                "output_type='np' [1,F,H,W,3] in [0,1]; call_* = what each transformer call "
                "received (timestep_r -1: none); " + NOTE},
        dict(latents=noise, final_latents=final, video=video, **text, **calls))
    write_components(folder, guider, scheduler)
    print(f"hv15_pipeline_cfg_distilled: {len(recorder.calls)} transformer calls for {steps} steps")

    # --- the MeanFlow transformer (480p_i2v_step_distilled: use_meanflow true).
    i2v_dir = os.path.join(shared, "hv15_transformer_i2v")
    i2v_config = dict(HunyuanVideo15Transformer3DModel.load_config(i2v_dir))
    config = {k: v for k, v in i2v_config.items() if not k.startswith("_")}
    config["use_meanflow"] = True
    meanflow = HunyuanVideo15Transformer3DModel.from_config(config)
    base = load_file(os.path.join(i2v_dir, "diffusion_pytorch_model.safetensors"))
    missing, unexpected = meanflow.load_state_dict({k: v.float() for k, v in base.items()}, strict=False)
    assert not unexpected, unexpected
    assert missing and all(k.startswith("time_embed.timestep_embedder_r.") for k in missing), missing
    bf16_exact_([(k, p) for k, p in meanflow.named_parameters() if k in missing], 3601)
    meanflow = meanflow.to(torch.float32).eval()
    folder = os.path.join(out, "hv15_transformer_meanflow_i2v")
    os.makedirs(folder, exist_ok=True)
    meanflow.save_config(folder)
    state = meanflow.state_dict()
    save_file({k: state[k].to(torch.bfloat16).contiguous() for k in sorted(missing)},
              os.path.join(folder, SHARD_2), metadata={"format": "pt"})
    total = sum(v.numel() * 2 for v in state.values())
    with open(os.path.join(folder, INDEX), "w") as f:
        json.dump({"metadata": {"total_size": total},
                   "weight_map": {k: SHARD_2 if k in missing else SHARD_1 for k in sorted(state)}},
                  f, indent=2, sort_keys=True)
        f.write("\n")
    fio = load_file(os.path.join(i2v_dir, "io.safetensors"))
    inputs = {k: fio[k].float() for k in ("hidden_states", "timestep", "encoder_hidden_states",
                                          "encoder_attention_mask", "encoder_hidden_states_2",
                                          "encoder_attention_mask_2", "image_embeds")}
    inputs["timestep_r"] = (inputs["timestep"] * 0.625).floor()  # an earlier (smaller) timestep
    with torch.no_grad():
        out_r = meanflow(**inputs, return_dict=False)[0]
        out_no_r = meanflow(**{k: v for k, v in inputs.items() if k != "timestep_r"}, return_dict=False)[0]
    assert (out_r - out_no_r).abs().max() > 1e-3, "timestep_r changes nothing: the r-branch is dead"
    save_case(folder, {"model": "HunyuanVideo15Transformer3DModel",
                       "note": "i2v with use_meanflow: forward(..., timestep_r); shard 1 is "
                               "transformer_shard_1 unchanged, shard 2 time_embed.timestep_embedder_r; "
                               + NOTE,
                       "transformer_shard_1": "../hv15_transformer_i2v/diffusion_pytorch_model.safetensors"},
              dict(out=out_r, **inputs))
    print(f"hv15_transformer_meanflow_i2v: |out(r) - out(no r)| max {float((out_r - out_no_r).abs().max()):.3g}")

    # --- step-distilled image-to-video with timestep_r (here with CFG on, so that both branches
    # carry it; the released guider is 1.0, whose single call the cfg-distilled case checks).
    encoder = load_transformers(SiglipVisionModel, os.path.join(shared, "siglip_vision"))
    processor = SiglipImageProcessor.from_pretrained(os.path.join(shared, "siglip_vision"))
    steps, shift, seed, guidance, frames = 4, 7.0, 1237, 6.0, 9
    guider = ClassifierFreeGuidance(guidance_scale=guidance)
    scheduler = FlowMatchEulerDiscreteScheduler(shift=shift)
    pipe = HunyuanVideo15ImageToVideoPipeline(transformer=meanflow, vae=vae, scheduler=scheduler,
                                              guider=guider, image_encoder=encoder,
                                              feature_extractor=processor, **text_parts)
    pipe.set_progress_bar_config(disable=True)
    recorder = CallRecorder(meanflow)
    text = text_inputs(2002)
    text.update({"negative_" + k: v for k, v in text_inputs(2003).items()})
    image = rgb(7, 70, 90)
    height, width = pipe.video_processor.calculate_default_height_width(
        height=image.shape[0], width=image.shape[1], target_size=pipe.target_size)
    shape = (1, 32, (frames - 1) // 4 + 1, height // 16, width // 16)
    noise = torch.randn(shape, generator=torch.Generator().manual_seed(seed))
    call = dict(image=PIL.Image.fromarray(image), num_frames=frames, num_inference_steps=steps, **text)
    final, video = run_pipeline(pipe, recorder, call, noise)
    timesteps = schedule(shift, steps)
    calls = recorder.tensors()
    expected_r = timesteps[1:] + [0.0]
    assert len(recorder.calls) == 2 * steps, len(recorder.calls)
    for i, (t, r, _b) in enumerate(recorder.calls):
        assert r is not None and abs(float(r.reshape(-1)[0]) - expected_r[i // 2]) < 1e-3, (i, r, expected_r)
    folder = os.path.join(out, "hv15_pipeline_meanflow_i2v")
    save_case(folder, {
        "pipeline": "HunyuanVideo15ImageToVideoPipeline (image-to-video, use_meanflow: timestep_r = "
                    "the next timestep, 0 at the last step)",
        "guidance_scale": guidance, "flow_shift": shift, "height": height, "width": width,
        "image_height": int(image.shape[0]), "image_width": int(image.shape[1]),
        "target_size": int(pipe.target_size), "num_frames": frames, "steps": steps,
        "latents_seed": seed, "transformer": "../hv15_transformer_meanflow_i2v",
        "vae": "../hv15_vae_encode", "image_encoder": "../siglip_vision",
        "feature_extractor": "../siglip_vision", "transformer_calls": len(recorder.calls),
        "timesteps": timesteps, "timesteps_r": expected_r,
        "note": "height x width are what the pipeline chose from the image's aspect ratio and the "
                "transformer's target_size, then resize_mode='crop'; the transformer is two shards "
                "(see its case.json); call_* = what each transformer call received; " + NOTE},
        dict(latents=noise, final_latents=final, video=video,
             image_rgb_uint8=torch.from_numpy(image.astype(np.float32)), **text, **calls))
    write_components(folder, guider, scheduler)
    print(f"hv15_pipeline_meanflow_i2v: {height}x{width}, timesteps {timesteps}, timestep_r {expected_r}")


if __name__ == "__main__":
    main()
