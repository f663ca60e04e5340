#!/usr/bin/env python3
"""Kernel ceilings on this GPU for the shapes of the two models' recipes.

Times, with CUDA events (median of --repeat after warm-ups), the kernels a forward is made of,
each alone on random data:
  gemm   bf16 GEMMs (and the FP8 row-wise scaled GEMMs) at Wan2.2-TI2V-5B's batch-2 shapes;
  attn   bf16 attention through every SDPA backend libtorch offers (cuDNN, flash, efficient)
         at Wan's self- and cross-attention and HunyuanVideo-1.5's 121-frame joint attention,
         in the layout the models call it with (B, S, H, D storage viewed as B, H, S, D);
  triton a plain flash-attention forward written in Triton, at the same shapes, as a check on
         whether another kernel family beats cuDNN here;
  align  cuDNN attention with the query and/or key sequence padded to a multiple of 64 or 128
         (which side's length makes the kernel slow), and the cost of its log-sum-exp output.
Prints one line per case: shape, backend, milliseconds, TFLOP/s (2 FLOPs per multiply-add:
4 S_q S_k D per head for attention). Used by docs/performance.md ("Kernel ceilings").

  python3 bench/kernel_ceilings.py [--what gemm,attn,triton] [--repeat 20]
"""
import argparse
import statistics
import sys

import torch
import torch.nn.functional as F


def bench(fn, repeat, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def line(name, ms, flops):
    print(f"{name:<64} {ms:9.3f} ms {flops / ms / 1e9:8.1f} TFLOP/s", flush=True)


def gemms(repeat):
    m = 7020  # Wan2.2 batch 2 at 832x480x33: 2 x 3510 tokens
    shapes = [("square 8192", 8192, 8192, 8192), ("qkv 3072->9216", m, 9216, 3072),
              ("out 3072->3072", m, 3072, 3072), ("ffn1 3072->14336", m, 14336, 3072),
              ("ffn2 14336->3072", m, 3072, 14336)]
    for name, mm, n, k in shapes:
        a = torch.randn(mm, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        line(f"gemm bf16 {name} [{mm}x{k}]x[{k}x{n}]", bench(lambda: a @ w.t(), repeat),
             2 * mm * n * k)
        if hasattr(torch, "float8_e4m3fn") and hasattr(torch, "_scaled_mm"):
            a8 = a.to(torch.float8_e4m3fn)
            w8 = w.to(torch.float8_e4m3fn)
            sa = torch.rand(mm, 1, device="cuda", dtype=torch.float32) + 0.5
            sw = torch.rand(1, n, device="cuda", dtype=torch.float32) + 0.5
            try:
                fn = lambda: torch._scaled_mm(a8, w8.t(), scale_a=sa, scale_b=sw,
                                              out_dtype=torch.bfloat16, use_fast_accum=True)
                line(f"gemm fp8 rowwise {name}", bench(fn, repeat), 2 * mm * n * k)
            except RuntimeError as e:  # pragma: no cover - depends on the GPU
                print(f"gemm fp8 {name}: {e}".splitlines()[0])


def attention_cases():
    # (name, batch, heads, query tokens, key tokens, head dim)
    return [("wan self 832x480x33 b2", 2, 24, 3510, 3510, 128),
            ("wan self padded to 3584", 2, 24, 3584, 3584, 128),
            ("wan cross 832x480x33 b2", 2, 24, 3510, 512, 128),
            ("wan self 1280x704x121 b1", 1, 24, 27280, 27280, 128),
            ("hv15 joint 848x480x121 b1", 1, 16, 49546, 49546, 128)]


def make_qkv(b, h, sq, sk, d):
    # The models' layout: [B, S, H, D] storage, attention sees [B, H, S, D] views.
    q = torch.randn(b, sq, h, d, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
    k = torch.randn(b, sk, h, d, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
    v = torch.randn(b, sk, h, d, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
    return q, k, v


def sdpa(repeat):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backends = [("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION),
                ("efficient", SDPBackend.EFFICIENT_ATTENTION)]
    for name, b, h, sq, sk, d in attention_cases():
        q, k, v = make_qkv(b, h, sq, sk, d)
        flops = 4 * b * h * sq * sk * d
        for bname, backend in backends:
            try:
                with sdpa_kernel([backend]):
                    ms = bench(lambda: F.scaled_dot_product_attention(q, k, v), repeat)
                line(f"attn {bname:<9} {name}", ms, flops)
            except RuntimeError as e:
                print(f"attn {bname:<9} {name}: not taken ({str(e).splitlines()[0][:60]})")
        if name.startswith("wan self 832"):
            qc, kc, vc = (t.contiguous() for t in (q, k, v))
            with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                ms = bench(lambda: F.scaled_dot_product_attention(qc, kc, vc), repeat)
            line(f"attn cudnn     {name} (B,H,S,D contiguous)", ms, flops)
        del q, k, v
        torch.cuda.empty_cache()


def cudnn_alignment(repeat):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    cases = [("wan self", 2, 24, 3510, [(3510, 3510), (3584, 3510), (3510, 3584), (3584, 3584),
                                        (3520, 3520), (3520, 3510), (3510, 3520), (3456, 3456)]),
             ("hv15 joint", 1, 16, 49546, [(49546, 49546), (49664, 49546), (49546, 49664),
                                           (49664, 49664), (49600, 49600)])]
    for name, b, h, n, shapes in cases:
        for sq, sk in shapes:
            q, k, v = make_qkv(b, h, sq, sk, 128)
            with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                ms = bench(lambda: F.scaled_dot_product_attention(q, k, v), repeat)
            # TFLOP/s of the unpadded problem: what a padded call is worth to the model.
            line(f"align cudnn {name} q {sq} k {sk}", ms, 4 * b * h * n * n * 128)
            if sq == sk:
                fn = lambda: torch.ops.aten._scaled_dot_product_cudnn_attention(
                    q, k, v, None, True, 0.0, False, False)
                line(f"align cudnn {name} q {sq} k {sk} with log-sum-exp", bench(fn, repeat),
                     4 * b * h * n * n * 128)
            del q, k, v
        torch.cuda.empty_cache()


def triton_attention(repeat):
    import triton
    import triton.language as tl

    @triton.jit
    def fwd(Q, K, V, O, scale, sqb, sqh, sqm, skb, skh, skn, svb, svh, svn, sob, soh, som, H,
            SQ, SK, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
        pid_m = tl.program_id(0)
        bh = tl.program_id(1)
        bi = bh // H
        hi = bh % H
        offs_m = pid_m * BM + tl.arange(0, BM)
        offs_d = tl.arange(0, D)
        q = tl.load(Q + bi * sqb + hi * sqh + offs_m[:, None] * sqm + offs_d[None, :],
                    mask=offs_m[:, None] < SQ, other=0.0)
        m_i = tl.full([BM], float("-inf"), tl.float32)
        l_i = tl.zeros([BM], tl.float32)
        acc = tl.zeros([BM, D], tl.float32)
        qk_scale = scale * 1.4426950408889634
        kp = K + bi * skb + hi * skh
        vp = V + bi * svb + hi * svh
        full = (SK // BN) * BN
        for start in range(0, full, BN):
            offs_n = start + tl.arange(0, BN)
            k = tl.load(kp + offs_n[None, :] * skn + offs_d[:, None])
            s = tl.dot(q, k) * qk_scale
            m_new = tl.maximum(m_i, tl.max(s, 1))
            p = tl.math.exp2(s - m_new[:, None])
            alpha = tl.math.exp2(m_i - m_new)
            l_i = l_i * alpha + tl.sum(p, 1)
            v = tl.load(vp + offs_n[:, None] * svn + offs_d[None, :])
            acc = tl.dot(p.to(tl.bfloat16), v, acc * alpha[:, None])
            m_i = m_new
        if full < SK:
            offs_n = full + tl.arange(0, BN)
            k = tl.load(kp + offs_n[None, :] * skn + offs_d[:, None], mask=offs_n[None, :] < SK,
                        other=0.0)
            s = tl.where(offs_n[None, :] < SK, tl.dot(q, k) * qk_scale, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(s, 1))
            p = tl.math.exp2(s - m_new[:, None])
            alpha = tl.math.exp2(m_i - m_new)
            l_i = l_i * alpha + tl.sum(p, 1)
            v = tl.load(vp + offs_n[:, None] * svn + offs_d[None, :], mask=offs_n[:, None] < SK,
                        other=0.0)
            acc = tl.dot(p.to(tl.bfloat16), v, acc * alpha[:, None])
        acc = acc / l_i[:, None]
        tl.store(O + bi * sob + hi * soh + offs_m[:, None] * som + offs_d[None, :],
                 acc.to(tl.bfloat16), mask=offs_m[:, None] < SQ)

    for name, b, h, sq, sk, d in attention_cases():
        if "padded" in name:
            continue
        q, k, v = make_qkv(b, h, sq, sk, d)
        o = torch.empty(b, sq, h, d, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
        ref = F.scaled_dot_product_attention(q[:, :2], k[:, :2], v[:, :2])
        flops = 4 * b * h * sq * sk * d
        best = None
        for bm, bn, warps, stages in [(128, 64, 8, 3), (128, 128, 8, 2), (128, 64, 4, 3),
                                      (64, 64, 4, 3), (128, 128, 8, 3)]:
            grid = (triton.cdiv(sq, bm), b * h)

            def run():
                fwd[grid](q, k, v, o, d ** -0.5, *q.stride()[:3], *k.stride()[:3],
                          *v.stride()[:3], *o.stride()[:3], h, sq, sk, D=d, BM=bm, BN=bn,
                          num_warps=warps, num_stages=stages)
            try:
                ms = bench(run, repeat)
            except Exception as e:  # out of shared memory and the like
                print(f"triton {bm}x{bn} w{warps} s{stages} {name}: {str(e).splitlines()[0][:60]}")
                continue
            err = (o[:, :2].float() - ref.float()).abs().max().item()
            line(f"triton {bm}x{bn} w{warps} s{stages} {name} (max err {err:.1e})", ms, flops)
            best = ms if best is None else min(best, ms)
        del q, k, v, o
        torch.cuda.empty_cache()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--what", default="gemm,attn,triton,align")
    p.add_argument("--repeat", type=int, default=20)
    a = p.parse_args()
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, "
          f"cuDNN {torch.backends.cudnn.version()}", flush=True)
    what = a.what.split(",")
    if "gemm" in what:
        gemms(a.repeat)
    if "attn" in what:
        sdpa(a.repeat)
    if "triton" in what:
        triton_attention(a.repeat)
    if "align" in what:
        cudnn_alignment(a.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
