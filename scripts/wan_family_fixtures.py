#!/usr/bin/env python3
"""Reference fixtures for the Wan family (Wan2.1 VAE, Wan2.1 and Wan2.2-A14B pipelines) from
diffusers' own classes, at tiny configurations of the released architectures.

  PYTHONPATH=<diffusers>/src python3 scripts/wan_family_fixtures.py --out tests/fixtures/diffusers-ref

Writes one folder per case in the layout of ../shared/fixtures/diffusers-ref (README.md there):
`case.json`, `io.safetensors` (float32 inputs and outputs) and, for a model, what
`save_pretrained` writes (weights stored as bf16, their values bf16-exact, so that a float32
load reproduces the float32 reference). Everything runs in float32 on the CPU with TF32 off,
so the outputs do not depend on the machine. tests/fixtures/README.md lists the cases.
"""
import argparse
import json
import os

import numpy as np
import torch

STEPS = 6
FLOW_SHIFT = 3.0
HEIGHT, WIDTH, FRAMES = 32, 48, 9  # VAE stride 8 x patch 2 = 16 divides both


def bf16_exact(module, seed):
    """Random values for every parameter (norm gains and biases too), rounded to bf16."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if p.dim() <= 1 or "scale_shift_table" in name or "gamma" in name:
                base = 1.0 if (name.endswith(".weight") and p.dim() == 1) or "gamma" in name else 0.0
                noise = 0.1 * torch.randn(p.shape, generator=g)
                p.copy_(base + noise)
            p.copy_(p.to(torch.bfloat16).to(torch.float32))
    return module.eval()


def save_model(module, folder):
    os.makedirs(folder, exist_ok=True)
    module.to(torch.bfloat16).save_pretrained(folder, safe_serialization=True)
    module.to(torch.float32)


def save_case(folder, case, tensors):
    from safetensors.torch import save_file
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "case.json"), "w") as f:
        json.dump(case, f, indent=2, sort_keys=True)
        f.write("\n")
    save_file({k: v.detach().to(torch.float32).contiguous() for k, v in tensors.items()},
              os.path.join(folder, "io.safetensors"))


def wan21_vae():
    from diffusers import AutoencoderKLWan
    torch.manual_seed(0)
    # The Wan2.1 layout (is_residual false, z 16, 4 x 8 x 8, no patchify) at base_dim 8.
    return bf16_exact(AutoencoderKLWan(base_dim=8, z_dim=16, dim_mult=[1, 2, 4, 4], num_res_blocks=2,
                                       temperal_downsample=[False, True, True]), 11)


def wan_transformer(seed, in_channels, image_dim=None, pos_embed_seq_len=None):
    from diffusers import WanTransformer3DModel
    torch.manual_seed(seed)
    model = WanTransformer3DModel(
        patch_size=(1, 2, 2), num_attention_heads=2, attention_head_dim=32, in_channels=in_channels,
        out_channels=16, text_dim=32, freq_dim=256, ffn_dim=128, num_layers=2, cross_attn_norm=True,
        qk_norm="rms_norm_across_heads", eps=1e-6, image_dim=image_dim,
        added_kv_proj_dim=64 if image_dim else None, rope_max_seq_len=1024,
        pos_embed_seq_len=pos_embed_seq_len)
    return bf16_exact(model, seed + 100)


def clip_vision():
    from transformers import CLIPImageProcessor, CLIPVisionConfig, CLIPVisionModel
    torch.manual_seed(5)
    config = CLIPVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=3,
                              num_attention_heads=2, image_size=32, patch_size=8, projection_dim=32,
                              hidden_act="gelu")
    model = bf16_exact(CLIPVisionModel(config), 105)
    processor = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    return model, processor


def rgb(seed, h=HEIGHT, w=WIDTH):
    g = np.random.default_rng(seed)
    # A smooth image (a gradient plus noise) so that resizing is not all aliasing.
    y, x = np.mgrid[0:h, 0:w]
    img = np.stack([x * 255 / w, y * 255 / h, (x + y) * 127 / (h + w)], -1)
    img = np.clip(img + g.normal(0, 20, img.shape), 0, 255)
    return img.astype(np.uint8)


def scheduler():
    from diffusers import UniPCMultistepScheduler
    return UniPCMultistepScheduler(prediction_type="flow_prediction", use_flow_sigmas=True,
                                   flow_shift=FLOW_SHIFT)


def mid_boundary(steps=STEPS):
    """A boundary_ratio that splits the schedule after its third step."""
    s = scheduler()
    s.set_timesteps(steps)
    t = s.timesteps.to(torch.float64)
    return float((t[2] + t[3]) / 2 / s.config.num_train_timesteps), [float(x) for x in t]


def run_pipeline(pipe, call):
    captured = {}

    def keep(_pipe, _i, _t, kwargs):
        captured["latents"] = kwargs["latents"].clone()
        return kwargs

    out = pipe(**call, output_type="np", callback_on_step_end=keep,
               callback_on_step_end_tensor_inputs=["latents"])
    return torch.from_numpy(np.asarray(out.frames)), captured["latents"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    import PIL.Image
    from diffusers import WanImageToVideoPipeline, WanPipeline
    out = args.out
    note = "diffusers float32 on the CPU, TF32 off; weights bf16-exact (scripts/wan_family_fixtures.py)"

    # --- The Wan2.1 VAE: decode and encode.
    vae = wan21_vae()
    save_model(vae, os.path.join(out, "wan21_vae"))
    g = torch.Generator().manual_seed(21)
    latents = torch.randn(1, 16, 3, HEIGHT // 8, WIDTH // 8, generator=g)
    image = torch.rand(1, 3, FRAMES, HEIGHT, WIDTH, generator=g) * 2 - 1
    with torch.no_grad():
        decoded = vae.decode(latents).sample
        dist = vae.encode(image).latent_dist
    save_case(os.path.join(out, "wan21_vae"),
              {"model": "AutoencoderKLWan (Wan2.1 layout: not residual, z_dim 16, 4x8x8, no patchify)",
               "note": "decoded = vae.decode(latents); encoded_* = vae.encode(image).latent_dist; " + note},
              {"latents": latents, "decoded": decoded, "image": image, "encoded_mean": dist.mean,
               "encoded_logvar": dist.logvar})

    # --- Transformers: Wan2.1 / A14B T2V experts (16 -> 16), A14B I2V experts (36 -> 16),
    # Wan2.1 I2V with CLIP image tokens, and the first-last-frame variant (pos_embed_seq_len).
    t2v = wan_transformer(1, 16)
    t2v_2 = wan_transformer(2, 16)
    i2v = wan_transformer(3, 36)
    i2v_2 = wan_transformer(4, 36)
    clip, processor = clip_vision()
    clip_tokens = (32 // 8) ** 2 + 1
    i2v_clip = wan_transformer(6, 36, image_dim=32)
    flf2v_clip = wan_transformer(7, 36, image_dim=32, pos_embed_seq_len=2 * clip_tokens)
    for name, model in (("wan21_transformer", t2v), ("wan21_transformer_2", t2v_2),
                        ("wan_i2v_transformer", i2v), ("wan_i2v_transformer_2", i2v_2),
                        ("wan21_i2v_transformer", i2v_clip), ("wan21_flf2v_transformer", flf2v_clip)):
        save_model(model, os.path.join(out, name))
    os.makedirs(os.path.join(out, "clip_vision"), exist_ok=True)
    clip.to(torch.bfloat16).save_pretrained(os.path.join(out, "clip_vision"), safe_serialization=True)
    clip.to(torch.float32)
    processor.save_pretrained(os.path.join(out, "clip_vision"))

    g = torch.Generator().manual_seed(7)
    prompt = torch.randn(1, 16, 32, generator=g)
    negative = torch.randn(1, 16, 32, generator=g)
    # The CLIP cross-attention splits its context at length - 512 (diffusers hard-codes the text
    # encoder's 512 tokens): those cases take 512-token embeddings, as the real pipeline pads.
    prompt_512 = torch.randn(1, 512, 32, generator=g)
    negative_512 = torch.randn(1, 512, 32, generator=g)
    boundary, timesteps = mid_boundary()

    def case(name, pipe_cls, parts, seed, guidance, guidance_2=None, boundary_ratio=None,
             image=None, last_image=None, extra=None, text=(prompt, negative)):
        pipe = pipe_cls(tokenizer=None, text_encoder=None, vae=vae, scheduler=scheduler(),
                        boundary_ratio=boundary_ratio, expand_timesteps=False, **parts)
        pipe.set_progress_bar_config(disable=True)
        shape = (1, 16, (FRAMES - 1) // 4 + 1, HEIGHT // 8, WIDTH // 8)
        noise = torch.randn(shape, generator=torch.Generator().manual_seed(seed))
        call = dict(prompt_embeds=text[0], negative_prompt_embeds=text[1], height=HEIGHT, width=WIDTH,
                    num_frames=FRAMES, num_inference_steps=STEPS, guidance_scale=guidance,
                    latents=noise.clone())
        if guidance_2 is not None:
            call["guidance_scale_2"] = guidance_2
        tensors = {"latents": noise, "prompt_embeds": text[0], "negative_prompt_embeds": text[1]}
        if image is not None:
            call["image"] = PIL.Image.fromarray(image)
            tensors["image_rgb_uint8"] = torch.from_numpy(image.astype(np.float32))
        if last_image is not None:
            call["last_image"] = PIL.Image.fromarray(last_image)
            tensors["last_image_rgb_uint8"] = torch.from_numpy(last_image.astype(np.float32))
        with torch.no_grad():
            video, final = run_pipeline(pipe, call)
        tensors.update(video=video, final_latents=final)
        description = {"pipeline": pipe_cls.__name__ + "(expand_timesteps=False)" +
                       (f", boundary_ratio={boundary_ratio}" if boundary_ratio else ""),
                       "guidance_scale": guidance, "height": HEIGHT, "width": WIDTH, "num_frames": FRAMES,
                       "steps": STEPS, "flow_shift": FLOW_SHIFT, "latents_seed": seed, "vae": "../wan21_vae",
                       "scheduler": f"UniPCMultistepScheduler(flow_prediction, use_flow_sigmas, flow_shift={FLOW_SHIFT})",
                       "timesteps": timesteps, "note": note}
        if guidance_2 is not None:
            description["guidance_scale_2"] = guidance_2
        if boundary_ratio is not None:
            description["boundary_ratio"] = boundary_ratio
        description.update(extra or {})
        save_case(os.path.join(out, name), description, tensors)

    case("wan_pipeline_21_t2v", WanPipeline, {"transformer": t2v}, 1301, 5.0,
         extra={"transformer": "../wan21_transformer"})
    case("wan_pipeline_a14b_t2v", WanPipeline, {"transformer": t2v, "transformer_2": t2v_2}, 1302, 4.0,
         guidance_2=3.0, boundary_ratio=boundary,
         extra={"transformer": "../wan21_transformer", "transformer_2": "../wan21_transformer_2"})
    first, last = rgb(1), rgb(2)
    i2v_parts = {"transformer": i2v, "transformer_2": i2v_2, "image_encoder": None, "image_processor": None}
    i2v_names = {"transformer": "../wan_i2v_transformer", "transformer_2": "../wan_i2v_transformer_2"}
    case("wan_pipeline_a14b_i2v", WanImageToVideoPipeline, i2v_parts, 1303, 3.5, boundary_ratio=boundary,
         image=first, extra=i2v_names)
    case("wan_pipeline_a14b_flf2v", WanImageToVideoPipeline, i2v_parts, 1304, 3.5, boundary_ratio=boundary,
         image=first, last_image=last, extra=i2v_names)
    clip_parts = {"image_encoder": clip, "image_processor": processor}
    case("wan_pipeline_21_i2v", WanImageToVideoPipeline, dict(transformer=i2v_clip, **clip_parts), 1305, 5.0,
         image=first, extra={"transformer": "../wan21_i2v_transformer", "image_encoder": "../clip_vision"},
         text=(prompt_512, negative_512))
    case("wan_pipeline_21_flf2v", WanImageToVideoPipeline, dict(transformer=flf2v_clip, **clip_parts), 1306,
         5.0, image=first, last_image=last,
         extra={"transformer": "../wan21_flf2v_transformer", "image_encoder": "../clip_vision"},
         text=(prompt_512, negative_512))
    # What the CLIP path feeds the transformer, for a unit check of the image encoder.
    with torch.no_grad():
        pixels = processor(images=PIL.Image.fromarray(first), return_tensors="pt").pixel_values
        hidden = clip(pixel_values=pixels, output_hidden_states=True).hidden_states[-2]
    save_case(os.path.join(out, "clip_vision"),
              {"model": "CLIPVisionModel", "note": "pixel_values = CLIPImageProcessor(image); "
               "penultimate = hidden_states[-2] (what WanImageToVideoPipeline.encode_image returns); " + note},
              {"image_rgb_uint8": torch.from_numpy(first.astype(np.float32)), "pixel_values": pixels,
               "penultimate_hidden_state": hidden})
    print("boundary_ratio", boundary, "timesteps", timesteps)


if __name__ == "__main__":
    main()
