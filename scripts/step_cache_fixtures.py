#!/usr/bin/env python3
"""Reference fixtures for step caching (generation.cache) from diffusers' own cache hooks.

  PYTHONPATH=<diffusers>/src python3 scripts/step_cache_fixtures.py --out tests/fixtures/diffusers-ref

Each case runs a diffusers pipeline with `pipe.transformer.enable_cache(...)` in float32 on the
CPU (TF32 off) at a tiny configuration and records, besides the final latents and the video,
which transformer forwards ran their blocks: a forward hook on the last block's feed-forward
fires only when the whole stack ran (all three policies leave it out on a cached forward).
case.json's `cache` holds the policy as generation.cache spells it, `cache_decisions` the
decisions per CFG branch ("C" computed, "S" served from the cache), in call order.

  wan_cache_first_block   WanPipeline (the Wan2.1 T2V tiny models of wan_family_fixtures.py),
                          FirstBlockCacheConfig(threshold): a threshold between two of the
                          uncached run's first-block changes such that the cached run both
                          computes and skips and every change it compares with the threshold
                          is 0.5 % or more away from it (rounding cannot flip a decision).
  wan_cache_taylorseer    TaylorSeerCacheConfig(use_lite_mode=True, taylor_factors_dtype=float32)
                          at its defaults: the blocks skipped, proj_out's output extrapolated.
  wan_cache_magcache      MagCacheConfig with 8 ratios for 12 steps (diffusers resamples them).
  hv15_cache_first_block, hv15_cache_taylorseer, hv15_cache_magcache
                          the same for HunyuanVideo15Pipeline with the shared set's tiny models.
                          diffusers' TransformerBlockRegistry does not list
                          HunyuanVideo15TransformerBlock, so FirstBlockCache and MagCache do not
                          run on it as shipped: this script registers it (it returns
                          (hidden_states, encoder_hidden_states), as HunyuanVideoTransformerBlock)
                          and the hooks are otherwise diffusers' own.

Needs torch, safetensors, numpy and a diffusers source tree (58eb52c or later); the HunyuanVideo
cases need the shared fixtures (--shared, default $OMNIDP_FIXTURES_DIR, else
<checkout>/shared/fixtures, else <checkout>/../shared/fixtures) and are skipped without them.
"""
import argparse
import os

import numpy as np
import torch

from wan_family_fixtures import save_case  # the fixture layout (case.json, io.safetensors)

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKOUT = os.path.dirname(HERE)
NOTE = ("diffusers float32 on the CPU, TF32 off, its cache hooks (scripts/step_cache_fixtures.py); "
        "video is output_type='np' [1,F,H,W,3] in [0,1]")
STEPS = 12


def find_shared(explicit):
    candidates = [explicit] if explicit else [
        os.environ.get("OMNIDP_FIXTURES_DIR") or None,
        os.path.join(CHECKOUT, "shared", "fixtures"),
        os.path.join(CHECKOUT, "..", "shared", "fixtures"),
    ]
    for c in candidates:
        if c and os.path.isdir(os.path.join(c, "diffusers-ref", "hv15_transformer")):
            return os.path.join(os.path.abspath(c), "diffusers-ref")
    return None


class Decisions:
    """One letter per transformer call: C when the last block's feed-forward ran."""

    def __init__(self, transformer, last_ff):
        self.calls = []
        self._ran = False
        self._handles = [transformer.register_forward_pre_hook(self._start),
                         transformer.register_forward_hook(self._end),
                         last_ff.register_forward_hook(self._ff)]

    def close(self):
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def _start(self, *_):
        self._ran = False

    def _ff(self, *_):
        self._ran = True

    def _end(self, *_):
        self.calls.append("C" if self._ran else "S")

    def per_branch(self):
        # Both pipelines run the conditional branch first, then the unconditional one, per step.
        text = "".join(self.calls)
        return {"cond": text[0::2], "uncond": text[1::2]}


def cache_config(spec):
    from diffusers import FirstBlockCacheConfig, MagCacheConfig, TaylorSeerCacheConfig
    policy = spec["policy"]
    if policy == "first_block":
        return FirstBlockCacheConfig(threshold=spec["threshold"])
    if policy == "taylorseer":
        return TaylorSeerCacheConfig(cache_interval=spec["cache_interval"],
                                     disable_cache_before_step=spec["disable_cache_before_step"],
                                     max_order=spec["max_order"], use_lite_mode=True,
                                     taylor_factors_dtype=torch.float32)
    return MagCacheConfig(threshold=spec["threshold"], max_skip_steps=spec["max_skip_steps"],
                          retention_ratio=spec["retention_ratio"], num_inference_steps=STEPS,
                          mag_ratios=np.array(spec["mag_ratios"]))


def enable_cache(pipe, spec):
    # diffusers (58eb52c) keeps the list of a model's child hook registries from its first
    # cache_context (hooks.py, _get_child_registries) and disable_cache() does not drop it: a
    # policy enabled after another hooks modules that list lacks (TaylorSeer's proj_out), whose
    # hooks then never get a context ("No context is set"). Drop the stale list first.
    registry = getattr(pipe.transformer, "_diffusers_hook", None)
    if registry is not None:
        registry._child_registries_cache = None
    pipe.transformer.enable_cache(cache_config(spec))


# A first_block threshold stays 0.5 % or more from every change compared with it: float32
# rounding moves a change by about 1e-5 of itself; the tiny Wan's changes lie 2-5 % apart.
MARGIN = 1.005


class ChangeSpy:
    """Records the first-block relative changes diffusers compares with the threshold.

    With `compute_all`, every forward computes (the changes of a run without skips); otherwise
    diffusers' own decision is kept and only observed.
    """

    def __init__(self, compute_all):
        from diffusers.hooks import first_block_cache as fbc
        self.fbc, self.compute_all, self.changes = fbc, compute_all, []
        self.original = fbc.FBCHeadBlockHook._should_compute_remaining_blocks

    def __enter__(self):
        spy = self

        def should_compute(hook, residual):
            prev = hook.state_manager.get_state().head_block_residual
            if prev is not None:
                spy.changes.append(float(((residual - prev).abs().mean() / prev.abs().mean()).item()))
            return True if spy.compute_all else spy.original(hook, residual)

        self.fbc.FBCHeadBlockHook._should_compute_remaining_blocks = should_compute
        return self

    def __exit__(self, *_):
        self.fbc.FBCHeadBlockHook._should_compute_remaining_blocks = self.original


def measured_changes(pipe, run):
    """The first-block relative changes diffusers computes on an uncached run's forwards."""
    with ChangeSpy(compute_all=True) as spy:
        enable_cache(pipe, {"policy": "first_block", "threshold": 1.0})
        try:
            run()
        finally:
            pipe.transformer.disable_cache()
    return spy.changes


def candidate_thresholds(changes):
    """Thresholds between the measured changes with room on both sides, nearest the median first."""
    values = sorted(set(changes))
    median = float(np.median(values))
    candidates = [float(f"{(a * b) ** 0.5:.4g}") for a, b in zip(values, values[1:]) if b > a * MARGIN**2]
    return sorted(candidates, key=lambda t: abs(np.log(t / median)))


def first_block_threshold(pipe, run, changes, last_ff):
    """The first candidate whose cached run both computes and skips, every change it compares
    with the threshold at least MARGIN away from it (skips move the later changes: each one is
    measured against the last computed step), so that float32 rounding cannot flip a decision."""
    for t in candidate_thresholds(changes):
        decisions = Decisions(pipe.transformer, last_ff)
        with ChangeSpy(compute_all=False) as spy:
            enable_cache(pipe, {"policy": "first_block", "threshold": t})
            try:
                run()
            finally:
                pipe.transformer.disable_cache()
                decisions.close()
        clear = all(c > t * MARGIN or c < t / MARGIN for c in spy.changes)
        # One pipeline call's decisions (run() makes two alike); a branch's first forward always
        # computes (nothing cached yet), so "computes" means a later one does.
        decisions.calls = decisions.calls[len(decisions.calls) // 2:]
        branches = decisions.per_branch().values()
        if clear and any("S" in b for b in branches) and any("C" in b[1:] for b in branches):
            return t, spy.changes
    raise SystemExit(f"no first_block threshold clear of the measured changes {sorted(changes)}")


def sampler(pipe, noise, call):
    """The pipeline twice from the same noise: to the final latents, then to the video."""
    def run():
        with torch.no_grad():
            final = pipe(latents=noise.clone(), output_type="latent", **call).frames
            video = pipe(latents=noise.clone(), output_type="np", **call).frames
        return final.float(), torch.from_numpy(np.asarray(video)).float()
    return run


POLICIES = {
    "first_block": None,  # threshold measured per model
    "taylorseer": {"policy": "taylorseer", "cache_interval": 5, "disable_cache_before_step": 3,
                   "max_order": 1},
    "magcache": {"policy": "magcache", "threshold": 0.06, "max_skip_steps": 3, "retention_ratio": 0.2,
                 "mag_ratios": [1.0, 1.01, 1.005, 1.0, 0.995, 0.99, 0.98, 0.95]},
}


def run_cases(prefix, pipe, run, last_ff, description, tensors, out):
    changes = measured_changes(pipe, run)
    try:
        threshold, cached_changes = first_block_threshold(pipe, run, changes, last_ff)
    except SystemExit as e:  # no threshold clear of the changes: the other policies still run
        print(f"{prefix}_cache_first_block: skipped: {e}")
        threshold = None
    for name, spec in POLICIES.items():
        if spec is None:
            if threshold is None:
                continue
            spec = {"policy": "first_block", "threshold": threshold}
        enable_cache(pipe, spec)
        decisions = Decisions(pipe.transformer, last_ff)
        try:
            final, video = run()
        finally:
            pipe.transformer.disable_cache()
            decisions.close()
        # The latents run and the video run take the same decisions (each pipeline call starts
        # with fresh cache states); the video run's are kept.
        half = len(decisions.calls) // 2
        assert decisions.calls[:half] == decisions.calls[half:], decisions.calls
        decisions.calls = decisions.calls[half:]
        branches = decisions.per_branch()
        case = dict(description, cache=spec, cache_decisions=branches, note=NOTE)
        if name == "first_block":
            case["first_block_changes"] = changes  # uncached: every forward computed
            case["first_block_changes_cached"] = cached_changes  # those the cached run compared
        save_case(os.path.join(out, f"{prefix}_cache_{name}"), case,
                  dict(tensors, final_latents=final, video=video))
        print(f"{prefix}_cache_{name}: {spec} -> {branches}")


def wan_cases(out):
    from diffusers import AutoencoderKLWan, UniPCMultistepScheduler, WanPipeline, WanTransformer3DModel
    from safetensors.torch import load_file
    ref = os.path.join(CHECKOUT, "tests", "fixtures", "diffusers-ref")
    transformer = WanTransformer3DModel.from_pretrained(os.path.join(ref, "wan21_transformer"),
                                                        torch_dtype=torch.float32).eval()
    vae = AutoencoderKLWan.from_pretrained(os.path.join(ref, "wan21_vae"), torch_dtype=torch.float32).eval()
    scheduler = UniPCMultistepScheduler(prediction_type="flow_prediction", use_flow_sigmas=True,
                                        flow_shift=3.0)
    pipe = WanPipeline(tokenizer=None, text_encoder=None, vae=vae, scheduler=scheduler,
                       transformer=transformer, expand_timesteps=False)
    pipe.set_progress_bar_config(disable=True)
    io = load_file(os.path.join(ref, "wan_pipeline_21_t2v", "io.safetensors"))
    frames, height, width, seed, guidance = 9, 32, 48, 1401, 5.0
    noise = torch.randn(1, 16, (frames - 1) // 4 + 1, height // 8, width // 8,
                        generator=torch.Generator().manual_seed(seed))
    call = dict(prompt_embeds=io["prompt_embeds"], negative_prompt_embeds=io["negative_prompt_embeds"],
                height=height, width=width, num_frames=frames, num_inference_steps=STEPS,
                guidance_scale=guidance)

    run = sampler(pipe, noise, call)

    description = {"pipeline": "WanPipeline(expand_timesteps=False)", "guidance_scale": guidance,
                   "height": height, "width": width, "num_frames": frames, "steps": STEPS,
                   "flow_shift": 3.0, "latents_seed": seed, "transformer": "../wan21_transformer",
                   "vae": "../wan21_vae",
                   "scheduler": "UniPCMultistepScheduler(flow_prediction, use_flow_sigmas, flow_shift=3.0)"}
    tensors = {"latents": noise, "prompt_embeds": io["prompt_embeds"],
               "negative_prompt_embeds": io["negative_prompt_embeds"]}
    run_cases("wan", pipe, run, transformer.blocks[-1].ffn, description, tensors, out)


def hv15_cases(out, shared):
    from diffusers import (AutoencoderKLHunyuanVideo15, FlowMatchEulerDiscreteScheduler,
                           HunyuanVideo15Pipeline, HunyuanVideo15Transformer3DModel)
    from diffusers.guiders import ClassifierFreeGuidance
    from diffusers.hooks._helpers import TransformerBlockMetadata, TransformerBlockRegistry
    from diffusers.models.transformers.transformer_hunyuan_video15 import HunyuanVideo15TransformerBlock
    TransformerBlockRegistry.register(
        model_class=HunyuanVideo15TransformerBlock,
        metadata=TransformerBlockMetadata(return_hidden_states_index=0, return_encoder_hidden_states_index=1))
    transformer = HunyuanVideo15Transformer3DModel.from_pretrained(
        os.path.join(shared, "hv15_transformer"), torch_dtype=torch.float32).to(torch.float32).eval()
    vae = AutoencoderKLHunyuanVideo15.from_pretrained(
        os.path.join(shared, "hv15_vae_encode"), torch_dtype=torch.float32).to(torch.float32).eval()
    shift, seed, height, width, frames, guidance = 5.0, 1402, 64, 96, 9, 6.0
    guider = ClassifierFreeGuidance(guidance_scale=guidance)
    scheduler = FlowMatchEulerDiscreteScheduler(shift=shift)
    pipe = HunyuanVideo15Pipeline(transformer=transformer, vae=vae, scheduler=scheduler, guider=guider,
                                  text_encoder=None, tokenizer=None, text_encoder_2=None, tokenizer_2=None)
    pipe.set_progress_bar_config(disable=True)
    g = torch.Generator().manual_seed(2101)

    def text(prefix=""):
        embeds = torch.randn(1, 16, 48, generator=g)
        embeds_2 = torch.randn(1, 6, 40, generator=g)
        mask = torch.ones(1, 16)
        mask[:, 13:] = 0
        mask_2 = torch.ones(1, 6)
        mask_2[:, 4:] = 0
        return {prefix + "prompt_embeds": embeds, prefix + "prompt_embeds_mask": mask,
                prefix + "prompt_embeds_2": embeds_2, prefix + "prompt_embeds_mask_2": mask_2}

    inputs = dict(text(), **text("negative_"))
    noise = torch.randn(1, 32, (frames - 1) // 4 + 1, height // 16, width // 16,
                        generator=torch.Generator().manual_seed(seed))
    call = dict(height=height, width=width, num_frames=frames, num_inference_steps=STEPS, **inputs)

    run = sampler(pipe, noise, call)

    description = {"pipeline": "HunyuanVideo15Pipeline (text-to-video)", "guidance_scale": guidance,
                   "flow_shift": shift, "height": height, "width": width, "num_frames": frames,
                   "steps": STEPS, "latents_seed": seed, "transformer": "../hv15_transformer",
                   "vae": "../hv15_vae_encode"}
    run_cases("hv15", pipe, run, transformer.transformer_blocks[-1].ff, description,
              dict(latents=noise, **inputs), out)
    for name in POLICIES:
        folder = os.path.join(out, f"hv15_cache_{name}")
        guider.save_pretrained(os.path.join(folder, "guider"))
        scheduler.save_pretrained(os.path.join(folder, "scheduler"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--shared", help="the shared fixtures folder (holding diffusers-ref/)")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    out = os.path.abspath(args.out)
    wan_cases(out)
    shared = find_shared(args.shared)
    if shared is None:
        print("no shared fixtures: the HunyuanVideo-1.5 cases are skipped")
    else:
        hv15_cases(out, shared)


if __name__ == "__main__":
    main()
