"""GPU tests (H100/H200, sm_90): numerics against a float64 reference,
SDPA semantics, bitwise determinism and layouts. `pytest -m cuda`; they skip
without torch or a GPU (conftest.py)."""

import math

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
import torch.nn.functional as F  # noqa: E402

import dash_attn  # noqa: E402

pytestmark = pytest.mark.cuda
DEV = "cuda"
BF16 = torch.bfloat16


def _mask(sq, sk, align, device):
    i = torch.arange(sq, device=device)[:, None]
    j = torch.arange(sk, device=device)[None, :]
    off = sk - sq if align == "bottom_right" else 0
    return j <= i + off


def reference(q, k, v, do, causal, align="top_left", scale=None):
    """float64 attention and its gradients; BHSD, GQA by repeating K/V.
    Returns o, lse [B, H, S_q] (natural log of the scaled scores), dq, dk, dv."""
    q, k, v, do = (t.detach().double().requires_grad_(True) for t in (q, k, v, do))
    hq, hkv = q.shape[1], k.shape[1]
    scale = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
    kr = k.repeat_interleave(hq // hkv, dim=1)
    vr = v.repeat_interleave(hq // hkv, dim=1)
    s = torch.einsum("bhqd,bhkd->bhqk", q, kr) * scale
    if causal:
        s = s.masked_fill(~_mask(q.shape[2], k.shape[2], align, q.device), float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    o = torch.einsum("bhqk,bhkd->bhqd", torch.softmax(s, dim=-1), vr)
    dq, dk, dv = torch.autograd.grad(o, (q, k, v), do)
    return o.detach(), lse.detach(), dq, dk, dv


def rel_err(a, ref):
    return ((a.double() - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def inputs(B, H, Hkv, sq, sk, D, seed=0):
    g = torch.Generator(device=DEV).manual_seed(seed)
    mk = lambda h, s: torch.randn(B, h, s, D, device=DEV, dtype=BF16, generator=g)  # noqa: E731
    q, k, v = mk(H, sq), mk(Hkv, sk), mk(Hkv, sk)
    do = mk(H, sq)
    return q, k, v, do


def dash_grads(q, k, v, do, **kw):
    q, k, v = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
    out = dash_attn.attention(q, k, v, **kw)
    out.backward(do)
    return out.detach(), q.grad, k.grad, v.grad


# Below 1e-2 relative error against float64: bf16 rounding of inputs/outputs.
TOL = 1e-2


@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", [(2, 4, 4, 256, 256), (1, 4, 2, 192, 320), (1, 6, 1, 128, 128)],
                         ids=["mha", "gqa-sq<sk", "mqa"])
def test_attention_matches_float64(D, causal, shape):
    B, H, Hkv, sq, sk = shape
    q, k, v, do = inputs(B, H, Hkv, sq, sk, D)
    out, dq, dk, dv = dash_grads(q, k, v, do, causal=causal)
    o_ref, _, dq_ref, dk_ref, dv_ref = reference(q, k, v, do, causal, "top_left")
    for name, a, r in (("out", out, o_ref), ("dq", dq, dq_ref), ("dk", dk, dk_ref),
                       ("dv", dv, dv_ref)):
        assert rel_err(a, r) < TOL, (name, rel_err(a, r))


@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("sq, sk", [(128, 384), (384, 128), (200, 200)])
def test_attention_is_sdpa_is_causal_top_left(D, sq, sk):
    """SDPA's is_causal is top-left also for S_q != S_k; so is attention()."""
    q, k, v, do = inputs(2, 4, 4, sq, sk, D, seed=1)
    out, dq, dk, dv = dash_grads(q, k, v, do, causal=True)
    qs, ks, vs = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
    ref = F.scaled_dot_product_attention(qs, ks, vs, is_causal=True)
    ref.backward(do)
    assert rel_err(out, ref.detach().double()) < TOL
    _, _, dq64, dk64, dv64 = reference(q, k, v, do, True, "top_left")
    for a, r in ((dq, dq64), (dk, dk64), (dv, dv64)):
        assert rel_err(a, r) < TOL
    # and SDPA's own gradients agree with the same reference
    assert rel_err(qs.grad, dq64) < TOL


@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("causal, align", [(False, "bottom_right"), (True, "bottom_right"),
                                           (True, "top_left")])
def test_attention_backward_bshd_flash_convention(D, causal, align):
    B, H, Hkv, sq, sk = 2, 4, 2, 192, 320
    q, k, v, do = inputs(B, H, Hkv, sq, sk, D, seed=2)
    o, lse, dq_ref, dk_ref, dv_ref = reference(q, k, v, do, causal, align)
    t = lambda x: x.transpose(1, 2).contiguous()  # noqa: E731  BHSD -> BSHD memory
    dq, dk, dv = dash_attn.attention_backward(
        t(q), t(k), t(v), t(o.to(BF16)), t(do), lse.float().contiguous(), causal=causal,
        causal_align=align)
    assert dq.shape == (B, sq, H, D) and dk.shape == (B, sk, Hkv, D)
    for a, r in ((dq, dq_ref), (dk, dk_ref), (dv, dv_ref)):
        assert rel_err(a.transpose(1, 2), r) < TOL


def test_bhsd_and_bshd_memory_give_identical_gradients():
    B, H, sq, D = 2, 4, 256, 128
    q, k, v, do = inputs(B, H, H, sq, sq, D, seed=3)
    o, lse, *_ = reference(q, k, v, do, True)
    o = o.to(BF16)
    lse = lse.float()
    # (a) BSHD in memory, (b) BHSD in memory viewed as BSHD, (c) layout="bhsd"
    a = dash_attn.attention_backward(*(x.transpose(1, 2).contiguous() for x in (q, k, v, o, do)),
                                     lse, causal=True)
    b = dash_attn.attention_backward(*(x.transpose(1, 2) for x in (q, k, v, o, do)), lse,
                                     causal=True)
    c = dash_attn.attention_backward(q, k, v, o, do, lse, causal=True, layout="bhsd")
    for x, y, z in zip(a, b, c):
        assert torch.equal(x, y.contiguous()) and torch.equal(x, z.transpose(1, 2))


@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("causal", [False, True])
def test_bitwise_deterministic(D, causal):
    q, k, v, do = inputs(2, 8, 8, 2048, 2048, D, seed=4)
    first = dash_grads(q, k, v, do, causal=causal)
    for _ in range(10):
        again = dash_grads(q, k, v, do, causal=causal)
        assert all(torch.equal(x, y) for x, y in zip(first, again))


@pytest.mark.parametrize("schedule", dash_attn.POLICIES)
def test_every_schedule_or_a_clear_error(schedule):
    q, k, v, do = inputs(1, 4, 4, 512, 512, 128, seed=5)
    try:
        out, dq, dk, dv = dash_grads(q, k, v, do, causal=True, schedule=schedule)
    except RuntimeError as e:  # no such kernel (shift is full-mask only)
        assert "no kernel" in str(e) or "refused" in str(e)
        return
    _, _, dq_ref, _, _ = reference(q, k, v, do, True)
    assert rel_err(dq, dq_ref) < TOL


def test_side_stream_and_autocast():
    q, k, v, do = inputs(1, 4, 4, 256, 256, 64, seed=6)
    want = dash_grads(q, k, v, do, causal=True)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        got = dash_grads(q, k, v, do, causal=True)
    torch.cuda.current_stream().wait_stream(s)
    assert all(torch.equal(x, y) for x, y in zip(want, got))
    qf, kf, vf = (t.float().requires_grad_(True) for t in (q, k, v))
    with torch.autocast("cuda", dtype=BF16):
        out = dash_attn.attention(qf, kf, vf, causal=True)
    assert out.dtype == BF16
    out.backward(do)
    assert qf.grad.dtype == torch.float32


def test_errors_on_gpu():
    q, k, v, do = inputs(1, 2, 2, 128, 128, 64)
    with pytest.raises(ValueError, match="head_dim 96 is not supported"):
        x = torch.randn(1, 2, 128, 96, device=DEV, dtype=BF16, requires_grad=True)
        dash_attn.attention(x, x, x)
    with pytest.raises(RuntimeError, match="float16 kernels are not compiled yet"):
        x = torch.randn(1, 2, 128, 64, device=DEV, dtype=torch.float16, requires_grad=True)
        dash_attn.attention(x, x, x)
    with pytest.raises(ValueError, match="q.dtype is float32"):
        x = torch.randn(1, 2, 128, 64, device=DEV, requires_grad=True)
        dash_attn.attention(x, x, x)
    lse = torch.zeros(1, 2, 128, device=DEV)
    bad = torch.randn(1, 128, 2, 128, device=DEV, dtype=BF16)[..., ::2]
    t = lambda x: x.transpose(1, 2)  # noqa: E731
    with pytest.raises(ValueError, match="q has a non-contiguous head dim"):
        dash_attn.attention_backward(bad, t(k), t(v), t(q), t(do), lse)
    with pytest.raises(ValueError, match="lse.dtype must be float32"):
        dash_attn.attention_backward(t(q), t(k), t(v), t(q), t(do), lse.to(BF16))


def test_expanded_grad_output():
    """out.sum().backward() hands the backward a stride-0 do."""
    q, k, v, _ = inputs(1, 2, 2, 128, 128, 64)
    q.requires_grad_(True)
    dash_attn.attention(q, k, v).sum().backward()
    assert torch.isfinite(q.grad).all()


def test_repeated_signature_new_pointers_and_checks():
    """A repeated call reuses the argument struct of its signature (shapes,
    strides, dtypes, options) with this call's pointers: new tensors of the
    same shapes give their own gradients, and a misaligned pointer is still
    refused by name."""
    q, k, v, do = inputs(1, 2, 2, 256, 256, 64, seed=8)
    _, lse, *_ = reference(q, k, v, do, True)
    o = dash_grads(q, k, v, do, causal=True)[0]
    args = lambda *x: [t.transpose(1, 2) for t in x]  # noqa: E731
    lse = lse.float()
    first = dash_attn.attention_backward(*args(q, k, v, o, do), lse, causal=True)
    q2, k2, v2, do2 = inputs(1, 2, 2, 256, 256, 64, seed=9)
    o2 = dash_grads(q2, k2, v2, do2, causal=True)[0]
    _, lse2, dq2_ref, _, _ = reference(q2, k2, v2, do2, True)
    second = dash_attn.attention_backward(*args(q2, k2, v2, o2, do2), lse2.float(), causal=True)
    assert rel_err(second[0].transpose(1, 2), dq2_ref) < TOL
    assert not torch.equal(first[0], second[0])
    again = dash_attn.attention_backward(*args(q, k, v, o, do), lse, causal=True)
    assert all(torch.equal(x, y) for x, y in zip(first, again))
    # Same shapes and strides, data 2 bytes past a 16-byte boundary.
    buf = torch.empty(q.numel() + 8, device=DEV, dtype=BF16)
    q_odd = buf[1:1 + q.numel()].view(q.shape).copy_(q)
    assert q_odd.stride() == q.stride()
    with pytest.raises(ValueError, match="q.data must be 16-byte aligned"):
        dash_attn.attention_backward(*args(q_odd, k, v, o, do), lse, causal=True)


@pytest.mark.parametrize("D,causal", [(64, True), (128, False)])
def test_cuda_graph_capture_and_replay(D, causal):
    """attention_backward captured into a CUDA graph (PyTorch's global capture
    mode) with no eager call before it: every replay gives the eager call's
    gradients bit for bit, also after the inputs are refilled in place (the
    captured tensor maps point at the same tensors; the workspace is the
    graph's own allocation)."""
    B, H, s = 2, 4, 512
    q, k, v, do = inputs(B, H, H, s, s, D, seed=11)
    o, lse, *_ = reference(q, k, v, do, causal)
    static = [x.transpose(1, 2).contiguous() for x in (q, k, v, o.to(BF16), do)] + [lse.float()]

    def call():
        return dash_attn.attention_backward(*static, causal=causal)

    # No eager call first, not even an earlier test's: a fresh runtime (no
    # graph of an old one is alive here) must load what it needs under the
    # capture itself (in the relaxed mode) and size its own workspace.
    from dash_attn import _runtime
    _runtime.reset_runtimes()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = call()
    for seed in (11, 12):
        q2, k2, v2, do2 = inputs(B, H, H, s, s, D, seed=seed)
        o2, lse2, *_ = reference(q2, k2, v2, do2, causal)
        fresh = [x.transpose(1, 2).contiguous() for x in (q2, k2, v2, o2.to(BF16), do2)]
        for dst, src in zip(static, fresh + [lse2.float()]):
            dst.copy_(src)
        want = call()  # eager, same tensors
        for _ in range(3):
            g.replay()
            torch.cuda.synchronize()
            assert all(torch.equal(x, y) for x, y in zip(out, want)), seed
        _, _, dq_ref, dk_ref, dv_ref = reference(q2, k2, v2, do2, causal)
        for a, r in ((out[0], dq_ref), (out[1], dk_ref), (out[2], dv_ref)):
            assert rel_err(a.transpose(1, 2), r) < TOL


@pytest.mark.parametrize("backend, mode", [("aot_eager", None), ("inductor", None),
                                           ("inductor", "reduce-overhead")])
def test_torch_compile_fullgraph(backend, mode):
    """torch.compile(fullgraph=True) traces attention (forward and backward)
    and attention_backward with no graph break: the launch is the
    dash_attn::attention_backward custom operator. aot_eager runs the eager
    kernels, so forward and gradients equal the eager calls bit for bit;
    inductor's are checked against float64, also in mode="reduce-overhead"
    (inductor's CUDA-graph mode)."""
    torch._dynamo.reset()
    compile_kw = dict(fullgraph=True, backend=backend, mode=mode)
    D, causal = 64, True
    q, k, v, do = inputs(2, 4, 2, 256, 256, D, seed=21)
    out_e, dq_e, dk_e, dv_e = dash_grads(q, k, v, do, causal=causal)
    qc, kc, vc = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
    f = torch.compile(lambda q, k, v: dash_attn.attention(q, k, v, causal=causal),
                      **compile_kw)
    out = f(qc, kc, vc)
    out.backward(do)
    got = (out.detach(), qc.grad, kc.grad, vc.grad)
    if backend == "aot_eager":
        for name, a, e in zip(("out", "dq", "dk", "dv"), got, (out_e, dq_e, dk_e, dv_e)):
            assert torch.equal(a, e), name
    o_ref, _, dq_ref, dk_ref, dv_ref = reference(q, k, v, do, causal)
    for name, a, r in zip(("out", "dq", "dk", "dv"), got, (o_ref, dq_ref, dk_ref, dv_ref)):
        assert rel_err(a, r) < TOL, (backend, name, rel_err(a, r))

    # out.sum().backward(): a stride-0 dout, which the operator copies to a
    # kernel-friendly layout (its gradients keep q, k, v's layouts).
    def sum_grads(fn):
        ts = [t.detach().clone().requires_grad_(True) for t in (q, k, v)]
        fn(*ts).float().sum().backward()
        return [t.grad for t in ts]
    eager_sum = sum_grads(lambda q, k, v: dash_attn.attention(q, k, v, causal=causal))
    for name, a, e in zip(("dq", "dk", "dv"), sum_grads(f), eager_sum):
        assert a.stride() == e.stride(), name
        assert torch.equal(a, e) if backend == "aot_eager" else rel_err(a, e.double()) < TOL, name

    # Compiled, the metadata checks still refuse a bad input in the forward.
    with pytest.raises(Exception, match="DASH kernels take bfloat16"):
        f(*(t.detach().float().requires_grad_(True) for t in (q, k, v)))

    # attention_backward alone (BHSD, the SDPA forward's out and lse).
    from dash_attn._torch import _sdpa_forward
    q, k, v, do = inputs(2, 4, 4, 256, 256, D, seed=22)
    o, lse = _sdpa_forward(q, k, v, causal, "top_left", None)
    eager = dash_attn.attention_backward(q, k, v, o, do, lse, causal=causal, layout="bhsd")
    g = torch.compile(lambda *a: dash_attn.attention_backward(*a, causal=causal, layout="bhsd"),
                      **compile_kw)
    for _ in range(3):  # reduce-overhead: warm-up, record, replay
        compiled = [t.clone() for t in g(q, k, v, o, do, lse)]
    for name, a, e in zip(("dq", "dk", "dv"), compiled, eager):
        assert a.shape == e.shape and a.stride() == e.stride(), name
        assert torch.equal(a, e), (backend, name)  # one kernel call, same inputs
