"""The PyTorch API: attention_backward (FlashAttention convention) and
attention (drop-in for F.scaled_dot_product_attention). Imported on first
use, so `import dash_attn` works without torch."""

from typing import Optional, Tuple

import torch

from . import _runtime as R


# The call's struct per argument signature (shapes, strides, dtypes,
# devices and options of the six inputs; the gradients' layouts follow
# from them): a repeated call only writes its nine data pointers into a
# copy. Building it afresh (nine TensorMeta and field-by-field ctypes) was
# most of the 129 us of Python per call (bench/host_path.py, H200,
# bench/NOTES.md section 17). Only calls that launched are cached, so an
# argument error always takes the full path.
_ARGS_BY_SIGNATURE = {}
_ARGS_CACHE_LIMIT = 256


def _signature(tensors, options):
    try:
        return tuple((t.shape, t.stride(), t.dtype, t.device) for t in tensors) + options
    except (AttributeError, TypeError):
        return None  # not tensors: the full path reports it


def _launch(q, k, v, o, do, lse, *, causal, causal_align, scale, deterministic,
            schedule, layout, what):
    tensors = (q, k, v, o, do, lse)
    key = _signature(tensors, (bool(causal), causal_align, scale, bool(deterministic),
                               schedule, layout))
    template = _ARGS_BY_SIGNATURE.get(key) if key is not None else None
    if template is not None:
        # empty_like keeps the inputs' strides (BSHD or BHSD in memory alike).
        grads = (torch.empty_like(q), torch.empty_like(k), torch.empty_like(v))
        args = R.args_with_pointers(template, tensors + grads)
        metas = None
    else:
        metas = R.metas_of(tensors)
        R.check_inputs(metas, layout)
        if any(t.numel() == 0 for t in tensors):
            # Nothing to launch; the runtime refuses zero sizes.
            return (torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v))
        grads = (torch.empty_like(q), torch.empty_like(k), torch.empty_like(v))
        metas += R.metas_of(grads, R.GRAD_NAMES)
        args = R.build_args(metas, causal=causal, causal_align=causal_align, scale=scale,
                            deterministic=deterministic, schedule=schedule, layout=layout)
    device = q.device
    rt = R.get_runtime(device.index)
    # The runtime launches in the current CUDA context; the device guard makes
    # it the primary context of q's device, as PyTorch's own kernels use.
    with torch.cuda.device(device):
        stream = torch.cuda.current_stream(device).cuda_stream
        # dash_attention_bwd runs the same validation as dash_attention_bwd_check
        # before any driver call, so Python and C report the same errors.
        st, _ = rt.launch(args, stream)
    if st != R.SUCCESS:
        if metas is None:
            metas = R.metas_of(tensors + grads)
        R.raise_for(st, rt, metas, layout, what)
    if template is None and key is not None:
        if len(_ARGS_BY_SIGNATURE) >= _ARGS_CACHE_LIMIT:
            _ARGS_BY_SIGNATURE.clear()
        _ARGS_BY_SIGNATURE[key] = bytes(args)
    return grads


# ---------------------------------------------------------------------------
# torch.compile: the launch as a custom operator
# ---------------------------------------------------------------------------
# Dynamo cannot trace the ctypes launch (a graph break, and none at all with
# fullgraph=True) and AOTAutograd cannot run it on fake tensors. Under
# torch.compile both APIs therefore call torch.ops.dash_attn.attention_backward,
# whose fake implementation gives the gradients' metadata; eager calls keep
# the direct path (the operator's Python dispatch would add to the host time
# that bench/host_path.py measures).

def _compiling():
    return torch.compiler.is_compiling()


def _backward_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
                 do: torch.Tensor, lse: torch.Tensor, causal: bool, causal_align: str,
                 scale: Optional[float], deterministic: bool, schedule: str, layout: str,
                 friendly: bool, what: str) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    originals = (q, k, v)
    ins = _friendly_inputs((q, k, v, o, do, lse), friendly)
    grads = _launch(*ins, causal=causal, causal_align=causal_align, scale=scale,
                    deterministic=deterministic, schedule=schedule, layout=layout, what=what)
    # The fake implementation promises empty_like(q, k, v)'s layouts: where an
    # input was copied to a kernel-friendly layout, its gradient moves back.
    return tuple(g if t is orig else torch.empty_like(orig).copy_(g)
                 for g, t, orig in zip(grads, ins, originals))


def _backward_fake(q, k, v, o, do, lse, causal, causal_align, scale, deterministic,
                   schedule, layout, friendly, what):
    return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


BACKWARD_OP = None
if hasattr(torch.library, "custom_op"):  # torch >= 2.4
    # Fixed strides: inductor must pass the layouts the caller gave (the
    # default only from torch 2.6 on).
    _TAGS = tuple(t for t in (getattr(torch.Tag, "needs_fixed_stride_order", None),) if t)
    BACKWARD_OP = torch.library.custom_op("dash_attn::attention_backward", _backward_op,
                                          mutates_args=(), device_types="cuda", tags=_TAGS)
    BACKWARD_OP.register_fake(_backward_fake)


def _friendly_inputs(tensors, friendly):
    """The tensors, each copied to a kernel-friendly layout if `friendly`."""
    return tuple(_kernel_friendly(t) for t in tensors) if friendly else tuple(tensors)


def _backward(q, k, v, o, do, lse, *, causal, causal_align, scale, deterministic,
              schedule, layout, friendly, what):
    """The launch: through the custom operator while torch.compile traces."""
    if BACKWARD_OP is not None and _compiling():
        # The operator's schema takes bools and a float or None.
        return BACKWARD_OP(q, k, v, o, do, lse, bool(causal), causal_align,
                           None if scale is None else float(scale), bool(deterministic),
                           schedule, layout, friendly, what)
    return _launch(*_friendly_inputs((q, k, v, o, do, lse), friendly), causal=causal,
                   causal_align=causal_align, scale=scale, deterministic=deterministic,
                   schedule=schedule, layout=layout, what=what)


def attention_backward(q, k, v, o, do, lse, *, causal=False, scale=None,
                       deterministic=True, schedule="auto",
                       causal_align="bottom_right", layout="bshd"):
    """Gradients (dq, dk, dv) of softmax(scale * q k^T + mask) v, computed by
    DASH's AOT kernels on the current CUDA stream.

    FlashAttention convention (flash_attn_func's backward):
      q, o, do  [B, S_q, H, D]      (layout="bshd", default)
      k, v      [B, S_k, H_kv, D]   H % H_kv == 0 (GQA/MQA)
      lse       [B, H, S_q] float32: natural-log log-sum-exp of the SCALED
                scores per query row, as FlashAttention and SDPA's flash /
                efficient forwards return it.
    layout="bhsd" takes SDPA-shaped [B, H, S, D] tensors instead. Either way
    any strides work as long as the head dim is contiguous and the other
    strides are multiples of 16 bytes (a BHSD-in-memory tensor viewed as
    BSHD costs no copy). dtype: bfloat16 (float16 kernels are not compiled
    yet); head dim 64 or 128.

    causal: causal mask. ALIGNMENT: causal_align="bottom_right" (default,
      FlashAttention: key j visible to query i iff j <= i + S_k - S_q) or
      "top_left" (PyTorch SDPA is_causal: j <= i). Identical when S_q == S_k.
    scale: softmax scale, default 1/sqrt(D).
    deterministic: bitwise-reproducible dq (ordered reduction); False uses
      the kernels with atomic dq accumulation.
    schedule: "auto" (the schedule model picks) or "ascending", "spt",
      "descending", "shift", "symmetric-shift".

    Returns new tensors dq, dk, dv shaped and strided like q, k, v.
    Raises ValueError (DashArgumentError) for a bad argument, naming it, and
    RuntimeError (DashError) when no kernel matches or the driver fails.
    """
    causal_align = R.normalize_align(causal_align)
    layout = R.normalize_layout(layout)
    return _backward(q, k, v, o, do, lse, causal=causal, causal_align=causal_align,
                     scale=scale, deterministic=deterministic, schedule=schedule,
                     layout=layout, friendly=False, what="dash_attn.attention_backward")


# ---------------------------------------------------------------------------
# attention(): PyTorch forward, DASH backward
# ---------------------------------------------------------------------------

def _sdpa_forward(q, k, v, causal, causal_align, scale):
    """(out, lse) from PyTorch's fused forwards; BHSD in and out, lse
    [B, H, S_q] float32 natural log of the scaled scores (our convention)."""
    sq, sk = q.shape[2], k.shape[2]
    hq, hkv = q.shape[1], k.shape[1]
    if hq != hkv:
        # The forward sees K/V repeated per query head (what SDPA's enable_gqa
        # means); the backward gets the original H_kv heads and reduces dk/dv
        # over each group itself.
        k = k.repeat_interleave(hq // hkv, dim=1)
        v = v.repeat_interleave(hq // hkv, dim=1)
    aten = torch.ops.aten
    if causal and sq != sk:
        if causal_align == "top_left":
            # Memory-efficient attention: is_causal is top-left (SDPA's rule);
            # FlashAttention's would be bottom-right. lse comes padded to a
            # multiple of 32 rows.
            out, lse = aten._scaled_dot_product_efficient_attention(
                q, k, v, None, True, 0.0, True, scale=scale)[:2]
        else:
            # custom_mask_type 2 = CausalFromBottomRight; this op takes BSHD.
            out, lse = aten._efficient_attention_forward(
                q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), None, None,
                None, None, None, 0.0, 2, True, scale=scale)[:2]
            out = out.transpose(1, 2)
        lse = lse[..., :sq]
    else:
        # FlashAttention-2 through ATen: returns (out, logsumexp [B, H, S_q], ...).
        out, lse = aten._scaled_dot_product_flash_attention(
            q, k, v, 0.0, bool(causal), False, scale=scale)[:2]
    return out, lse.contiguous()


# A constant table, not _runtime's memo (TensorMeta.of): the compiled forward
# reads it while torch.compile traces, where a global memo's first fill would
# be a side effect in the graph.
_DTYPE_NAME = {torch.bfloat16: "bfloat16", torch.float16: "float16", torch.float32: "float32"}


def _kernel_friendly(t):
    """t itself if the kernels accept its layout, else a contiguous copy
    (e.g. an expanded do from .sum().backward() has stride 0)."""
    ok = (t.stride(-1) == 1 or t.shape[-1] == 1) and t.data_ptr() % 16 == 0
    ok = ok and all(n == 1 or (s > 0 and (s * t.element_size()) % 16 == 0)
                    for n, s in zip(t.shape[:-1], t.stride()[:-1]))
    return t if ok else t.clone(memory_format=torch.contiguous_format)


class _Fake:
    """Metadata-only stand-in for dash_attention_bwd_check."""

    def __init__(self, shape, dtype, device, ptr):
        self.shape, self.dtype, self.device, self._ptr = tuple(shape), dtype, device, ptr
        st, acc = [], 1
        for n in reversed(self.shape):
            st.append(acc)
            acc *= n
        self._strides = tuple(reversed(st))

    def stride(self):
        return self._strides

    def data_ptr(self):
        return self._ptr


def _early_check(q, k, v, causal, causal_align, scale, deterministic, schedule):
    """Refuse unsupported head dims / dtypes / shapes in the forward, not only
    when backward runs. Contiguous-stride metadata: the backward makes copies
    where the real strides do not fit."""
    B, H, Sq, D = q.shape
    fakes = [_Fake(q.shape, q.dtype, q.device, 16), _Fake(k.shape, k.dtype, k.device, 32),
             _Fake(v.shape, v.dtype, v.device, 48), _Fake(q.shape, q.dtype, q.device, 64),
             _Fake(q.shape, q.dtype, q.device, 80),
             _Fake((B, H, Sq), torch.float32, q.device, 96),
             _Fake(q.shape, q.dtype, q.device, 112), _Fake(k.shape, k.dtype, k.device, 128),
             _Fake(v.shape, v.dtype, v.device, 144)]
    metas = R.metas_of(fakes)
    R.check_inputs(metas, "bhsd")
    args = R.build_args(metas, causal=causal, causal_align=causal_align, scale=scale,
                        deterministic=deterministic, schedule=schedule, layout="bhsd")
    rt = R.get_runtime(q.device.index)
    st, _ = rt.check(args)
    if st != R.SUCCESS:
        R.raise_for(st, rt, metas, "bhsd", "dash_attn.attention")


class DashAttentionFunction(torch.autograd.Function):
    """out = SDPA forward (PyTorch's fused kernels); dq, dk, dv = DASH."""

    @staticmethod
    def forward(ctx, q, k, v, causal, causal_align, scale, deterministic, schedule):
        out, lse = _sdpa_forward(q, k, v, causal, causal_align, scale)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.cfg = dict(causal=causal, causal_align=causal_align, scale=scale,
                       deterministic=deterministic, schedule=schedule)
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, dout):
        q, k, v, out, lse = ctx.saved_tensors
        dq, dk, dv = _backward(q, k, v, out, dout, lse, layout="bhsd", friendly=True,
                               what="dash_attn.attention (backward)", **ctx.cfg)
        return dq, dk, dv, None, None, None, None, None


def attention(q, k, v, *, causal=False, scale=None, deterministic=True,
              schedule="auto", causal_align="top_left"):
    """Drop-in for F.scaled_dot_product_attention(q, k, v, is_causal=causal,
    scale=scale) whose backward is DASH's deterministic kernel.

    q [B, H, S_q, D], k, v [B, H_kv, S_k, D] (BHSD, like SDPA; H % H_kv == 0
    is GQA, as SDPA's enable_gqa=True). bfloat16, head dim 64 or 128.

    causal: ALIGNMENT is "top_left" by default, exactly SDPA's is_causal
      (query i sees keys j <= i, also when S_q != S_k);
      causal_align="bottom_right" gives FlashAttention's (j <= i + S_k - S_q).
    Forward: torch.ops.aten._scaled_dot_product_flash_attention (full mask,
      or causal with S_q == S_k) or, for causal with S_q != S_k,
      aten._scaled_dot_product_efficient_attention (top-left) /
      aten._efficient_attention_forward (bottom-right); each returns the
      log-sum-exp the backward needs. No dropout, no attn_mask.
    deterministic, schedule: as in attention_backward.
    Under torch.autocast the inputs are cast to the autocast dtype, as SDPA
    does. Bad arguments raise ValueError in the forward already.
    """
    causal_align = R.normalize_align(causal_align)
    if torch.is_autocast_enabled("cuda"):
        dt = torch.get_autocast_dtype("cuda")
        q, k, v = (t.to(dt) if t.is_floating_point() else t for t in (q, k, v))
    for t, n in ((q, "q"), (k, "k"), (v, "v")):
        if not isinstance(t, torch.Tensor):
            raise TypeError("%s must be a torch.Tensor, got %s" % (n, type(t).__name__))
        if t.dim() != 4:
            raise ValueError("%s must be 4-D [B, H, S, D] like SDPA's inputs, got shape %s"
                             % (n, list(t.shape)))
    if _compiling():
        # The checks that read only metadata (device, dtype, head-dim stride);
        # the others read pointers and run in the operator's call.
        R.check_inputs([R.TensorMeta(n, 0, t.shape, t.stride(), _DTYPE_NAME.get(t.dtype, t.dtype),
                                     str(t.device)) for t, n in ((q, "q"), (k, "k"), (v, "v"))],
                       "bhsd")
    elif torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
        _early_check(q, k, v, causal, causal_align, scale, deterministic, schedule)
    else:
        R.check_inputs([R.TensorMeta.of(t, n) for t, n in ((q, "q"), (k, "k"), (v, "v"))],
                       "bhsd")
    return DashAttentionFunction.apply(q, k, v, bool(causal), causal_align, scale,
                                       bool(deterministic), schedule)
