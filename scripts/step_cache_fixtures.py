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
  a14b_cache_first_block, a14b_cache_taylorseer, a14b_cache_magcache
                          WanPipeline with the tiny Wan2.1 pair as Wan2.2-T2V-A14B's experts
                          (transformer, transformer_2, the switch after step 6 of 12), each with
                          its own hooks. cache_decisions holds the second expert's as cond_2 and
                          uncond_2. MagCache: diffusers counts each transformer's steps from its
                          first forward, generation.cache (and the authors' A14B arrays) the
                          whole schedule's; transformer_2 gets the MagCacheConfig that reads the
                          same ratios and retention steps (cache_2_diffusers), and the decisions
                          of the same config on both (cache_decisions_same_config) are recorded.
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

    def per_branch(self, suffix=""):
        # Both pipelines run the conditional branch first, then the unconditional one, per step.
        text = "".join(self.calls)
        return {"cond" + suffix: text[0::2], "uncond" + suffix: text[1::2]}


class Watch:
    """Decisions of every transformer of a pipeline (Wan2.2-A14B: transformer, transformer_2).

    `experts` lists (transformer, last feed-forward); the second expert's branches are named
    cond_2 and uncond_2 (diffusers' transformer_2, generation.cache's "transformer 1").
    """

    def __init__(self, experts):
        self.watches = [Decisions(t, ff) for t, ff in experts]

    def close(self):
        for w in self.watches:
            w.close()

    def keep_second_half(self):
        # One pipeline call's decisions of the two sampler() runs: they must agree.
        for w in self.watches:
            half = len(w.calls) // 2
            assert w.calls[:half] == w.calls[half:], w.calls
            w.calls = w.calls[half:]

    def per_branch(self):
        out = {}
        for i, w in enumerate(self.watches):
            out.update(w.per_branch("" if i == 0 else f"_{i + 1}"))
        return out


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
                          retention_ratio=spec["retention_ratio"],
                          num_inference_steps=spec.get("num_inference_steps", STEPS),
                          mag_ratios=np.array(spec["mag_ratios"]))


def transformers(pipe):
    return [t for t in (pipe.transformer, getattr(pipe, "transformer_2", None)) if t is not None]


def enable_cache(pipe, spec, spec_2=None):
    """`spec` on every transformer, or `spec_2` on transformer_2 where given."""
    for i, transformer in enumerate(transformers(pipe)):
        # diffusers (58eb52c) keeps the list of a model's child hook registries from its first
        # cache_context (hooks.py, _get_child_registries) and disable_cache() does not drop it:
        # a policy enabled after another hooks modules that list lacks (TaylorSeer's proj_out),
        # whose hooks then never get a context ("No context is set"). Drop the stale list first.
        registry = getattr(transformer, "_diffusers_hook", None)
        if registry is not None:
            registry._child_registries_cache = None
        transformer.enable_cache(cache_config(spec_2 if i == 1 and spec_2 is not None else spec))


def disable_cache(pipe):
    for transformer in transformers(pipe):
        transformer.disable_cache()


def magcache_from_step(spec, first):
    """The MagCacheConfig of an expert whose first forward is step `first` of STEPS, such that
    diffusers' per-transformer count (step_index from 0 at the expert's first forward) reads the
    ratios and the retention steps of the whole schedule, as generation.cache does and as the
    MagCache authors' Wan2.2-A14B arrays are laid out (one array over both experts' steps)."""
    from diffusers.hooks.mag_cache import nearest_interp
    ratios = nearest_interp(torch.tensor(spec["mag_ratios"], dtype=torch.float64), STEPS)
    retention = int(spec["retention_ratio"] * STEPS + 0.5)
    rest = STEPS - first
    return dict(spec, mag_ratios=[float(r) for r in ratios[first:]], num_inference_steps=rest,
                retention_ratio=max(0, retention - first) / rest)


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
            disable_cache(pipe)
    return spy.changes


def candidate_thresholds(changes):
    """Thresholds between the measured changes with room on both sides, nearest the median first."""
    values = sorted(set(changes))
    median = float(np.median(values))
    candidates = [float(f"{(a * b) ** 0.5:.4g}") for a, b in zip(values, values[1:]) if b > a * MARGIN**2]
    return sorted(candidates, key=lambda t: abs(np.log(t / median)))


def first_block_threshold(pipe, run, changes, experts):
    """The first candidate whose cached run both computes and skips, every change it compares
    with the threshold at least MARGIN away from it (skips move the later changes: each one is
    measured against the last computed step), so that float32 rounding cannot flip a decision."""
    for t in candidate_thresholds(changes):
        decisions = Watch(experts)
        with ChangeSpy(compute_all=False) as spy:
            enable_cache(pipe, {"policy": "first_block", "threshold": t})
            try:
                run()
            finally:
                disable_cache(pipe)
                decisions.close()
        clear = all(c > t * MARGIN or c < t / MARGIN for c in spy.changes)
        # One pipeline call's decisions (run() makes two alike); a branch's first forward always
        # computes (nothing cached yet), so "computes" means a later one does.
        for w in decisions.watches:
            w.calls = w.calls[len(w.calls) // 2:]
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


def run_cases(prefix, pipe, run, experts, description, tensors, out, boundary_step=None):
    """One case per policy. `experts`: (transformer, last feed-forward) of each transformer;
    `boundary_step`: the first step of transformer_2 (Wan2.2-A14B), where it has one."""
    changes = measured_changes(pipe, run)
    try:
        threshold, cached_changes = first_block_threshold(pipe, run, changes, experts)
    except SystemExit as e:  # no threshold clear of the changes: the other policies still run
        print(f"{prefix}_cache_first_block: skipped: {e}")
        threshold = None

    def cached_run(spec, spec_2=None):
        enable_cache(pipe, spec, spec_2)
        decisions = Watch(experts)
        try:
            final, video = run()
        finally:
            disable_cache(pipe)
            decisions.close()
        # The latents run and the video run take the same decisions (the pipeline resets its
        # transformers' cache states at the end of a call); the video run's are kept.
        decisions.keep_second_half()
        return final, video, decisions.per_branch()

    for name, spec in POLICIES.items():
        if spec is None:
            if threshold is None:
                continue
            spec = {"policy": "first_block", "threshold": threshold}
        case = dict(description, cache=spec, note=NOTE)
        spec_2 = None
        if boundary_step is not None and spec["policy"] == "magcache":
            # What a diffusers user gets from the same MagCacheConfig on each transformer: the
            # second one starts its ratios and its retention steps over (recorded, not compared).
            case["cache_decisions_same_config"] = cached_run(spec)[2]
            spec_2 = magcache_from_step(spec, boundary_step)
            case["cache_2_diffusers"] = spec_2
        final, video, branches = cached_run(spec, spec_2)
        case["cache_decisions"] = branches
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
    run_cases("wan", pipe, run, [(transformer, transformer.blocks[-1].ffn)], description, tensors, out)


def a14b_cases(out):
    """Wan2.2-T2V-A14B's two experts (the tiny Wan2.1 pair of wan_family_fixtures.py), each with
    its own cache hooks (enable_cache on transformer and on transformer_2), the switch after the
    sixth of 12 steps."""
    from diffusers import AutoencoderKLWan, UniPCMultistepScheduler, WanPipeline, WanTransformer3DModel
    from safetensors.torch import load_file
    ref = os.path.join(CHECKOUT, "tests", "fixtures", "diffusers-ref")
    load = lambda name: WanTransformer3DModel.from_pretrained(  # noqa: E731
        os.path.join(ref, name), torch_dtype=torch.float32).eval()
    high, low = load("wan21_transformer"), load("wan21_transformer_2")
    vae = AutoencoderKLWan.from_pretrained(os.path.join(ref, "wan21_vae"), torch_dtype=torch.float32).eval()
    make_scheduler = lambda: UniPCMultistepScheduler(  # noqa: E731
        prediction_type="flow_prediction", use_flow_sigmas=True, flow_shift=3.0)
    boundary_step = STEPS // 2
    probe = make_scheduler()
    probe.set_timesteps(STEPS)
    t = probe.timesteps.to(torch.float64)
    boundary = float((t[boundary_step - 1] + t[boundary_step]) / 2 / probe.config.num_train_timesteps)
    pipe = WanPipeline(tokenizer=None, text_encoder=None, vae=vae, scheduler=make_scheduler(),
                       transformer=high, transformer_2=low, boundary_ratio=boundary,
                       expand_timesteps=False)
    pipe.set_progress_bar_config(disable=True)
    io = load_file(os.path.join(ref, "wan_pipeline_a14b_t2v", "io.safetensors"))
    frames, height, width, seed, guidance, guidance_2 = 9, 32, 48, 1403, 4.0, 3.0
    noise = torch.randn(1, 16, (frames - 1) // 4 + 1, height // 8, width // 8,
                        generator=torch.Generator().manual_seed(seed))
    call = dict(prompt_embeds=io["prompt_embeds"], negative_prompt_embeds=io["negative_prompt_embeds"],
                height=height, width=width, num_frames=frames, num_inference_steps=STEPS,
                guidance_scale=guidance, guidance_scale_2=guidance_2)

    run = sampler(pipe, noise, call)

    description = {"pipeline": f"WanPipeline(expand_timesteps=False), boundary_ratio={boundary}",
                   "guidance_scale": guidance, "guidance_scale_2": guidance_2, "boundary_ratio": boundary,
                   "boundary_step": boundary_step, "height": height, "width": width,
                   "num_frames": frames, "steps": STEPS, "flow_shift": 3.0, "latents_seed": seed,
                   "transformer": "../wan21_transformer", "transformer_2": "../wan21_transformer_2",
                   "vae": "../wan21_vae",
                   "scheduler": "UniPCMultistepScheduler(flow_prediction, use_flow_sigmas, flow_shift=3.0)"}
    tensors = {"latents": noise, "prompt_embeds": io["prompt_embeds"],
               "negative_prompt_embeds": io["negative_prompt_embeds"]}
    run_cases("a14b", pipe, run, [(high, high.blocks[-1].ffn), (low, low.blocks[-1].ffn)], description,
              tensors, out, boundary_step=boundary_step)


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
    run_cases("hv15", pipe, run, [(transformer, transformer.transformer_blocks[-1].ff)], description,
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
    a14b_cases(out)
    shared = find_shared(args.shared)
    if shared is None:
        print("no shared fixtures: the HunyuanVideo-1.5 cases are skipped")
    else:
        hv15_cases(out, shared)


if __name__ == "__main__":
    main()
