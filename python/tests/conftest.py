"""Fixtures for the dash_attn tests.

CPU tests need only the two native libraries (DASH_LIB_DIR, or the package
/ repository lookup): no torch, no GPU. scripts/test-python sets
DASH_REQUIRE_LIBS=1 so a missing library fails there instead of skipping.
Tests marked `cuda` need torch with an sm_90 GPU and the AOT kernels; they
skip with the reason otherwise.
"""

import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PY_ROOT = os.path.dirname(HERE)
REPO = os.path.dirname(PY_ROOT)
try:  # an installed dash_attn (pip install ./python) is what gets tested
    import dash_attn as _installed  # noqa: F401
except ImportError:  # else the checkout's python/ (CI: DASH_LIB_DIR gives the libraries)
    sys.path.insert(0, PY_ROOT)


def pytest_report_header(config):
    import dash_attn
    return "dash_attn from %s" % os.path.dirname(dash_attn.__file__)


def pytest_configure(config):
    config.addinivalue_line("markers", "cuda: needs PyTorch with an sm_90 GPU and the AOT kernels")


def _cuda_skip_reason():
    try:
        import torch
    except ImportError:
        return "PyTorch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA device"
    if torch.cuda.get_device_capability() != (9, 0):
        return "needs an sm_90 GPU (H100/H200), found sm_%d%d" % torch.cuda.get_device_capability()
    return None


def pytest_collection_modifyitems(config, items):
    reason = None
    checked = False
    for item in items:
        if "cuda" in item.keywords:
            if not checked:
                reason, checked = _cuda_skip_reason(), True
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def native_libs():
    """Skip (or fail under DASH_REQUIRE_LIBS=1) when the C libraries are absent."""
    from dash_attn import _paths
    try:
        return (_paths.find_library("dash_runtime"), _paths.find_library("dash_schedule_c"))
    except RuntimeError as e:
        if os.environ.get("DASH_REQUIRE_LIBS") == "1":
            pytest.fail(str(e))
        pytest.skip(str(e))


# ---------------------------------------------------------------------------
# Fake tensors and a manifest directory (the format scripts/aot writes)
# ---------------------------------------------------------------------------

class FakeTensor:
    """Tensor metadata only: what dash_attn reads from a torch.Tensor."""

    _next = [0x100000]

    def __init__(self, shape, dtype="torch.bfloat16", device="cuda:0", strides=None, ptr=None):
        self.shape = tuple(shape)
        self.dtype, self.device = dtype, device
        if strides is None:
            strides, acc = [], 1
            for n in reversed(self.shape):
                strides.insert(0, acc)
                acc *= n
        self._strides = tuple(strides)
        if ptr is None:
            ptr = FakeTensor._next[0]
            FakeTensor._next[0] += 0x100000
        self._ptr = ptr

    def stride(self):
        return self._strides

    def data_ptr(self):
        return self._ptr


def bshd_inputs(B=2, Sq=256, Sk=256, H=4, Hkv=4, D=64, dtype="torch.bfloat16",
                device="cuda:0", bhsd_memory=False):
    """q, k, v, o, do, lse in the FlashAttention (BSHD) logical order; with
    bhsd_memory the data is laid out BHSD and viewed as BSHD (strides)."""

    def t(S, Hn):
        if bhsd_memory:
            return FakeTensor((B, S, Hn, D), dtype, device, strides=(Hn * S * D, D, S * D, 1))
        return FakeTensor((B, S, Hn, D), dtype, device)

    return (t(Sq, H), t(Sk, Hkv), t(Sk, Hkv), t(Sq, H), t(Sq, H),
            FakeTensor((B, H, Sq), "torch.float32", device))


def _params(d, dtype):
    def mem(name, rank, elt, last=None):
        sizes = [None] * rank
        if last is not None:
            sizes[-1] = last
        return {"name": name, "kind": "memref", "rank": rank, "elt": elt, "static_sizes": sizes}

    ps = [mem(n, 4, dtype, d) for n in ("q", "k", "v", "o", "dO")]
    ps.append(mem("lse", 3, "f32"))
    ps += [mem(n, 4, dtype, d) for n in ("dq", "dk", "dv")]
    ps += [mem(n, 4, "f32", d) for n in ("dq_accum", "dk_accum", "dv_accum")]
    ps += [mem("dpsum", 3, "f32"), mem("lse_log2", 3, "f32"), mem("semaphores", 3, "i32")]
    ps.append({"name": "scale", "kind": "f32"})
    return ps


def write_manifest(d, head_dim, mask, policy, det=True, align=None, dtype="bf16",
                   block_m=64, block_n=64):
    tag = {"bottom_right": "br", "top_left": "tl"}.get(align)
    name = "d%d_%s%s_%s_%s" % (head_dim, mask, "_" + tag if tag else "",
                               policy.replace("-", "_"), "det" if det else "nondet")
    if dtype != "bf16":
        name += "_" + dtype
    m = {
        "name": name, "cubin": name + ".cubin", "arch": "sm_90a", "head_dim": head_dim,
        "dtype": dtype, "mask": mask, "policy": policy, "deterministic": det,
        "block_m": block_m, "block_n": block_n, "threads": 256,
        "kernels": {k: {"entry": "dash_bwd_" + k, "shared_bytes": s}
                    for k, s in (("preprocess", 0), ("main", 49152), ("postprocess", 0))},
        "params": _params(head_dim, dtype),
    }
    if align:
        m["align"] = align
    with open(os.path.join(d, name + ".json"), "w") as f:
        json.dump(m, f, indent=1)
    with open(os.path.join(d, name + ".cubin"), "wb") as f:
        f.write(b"not a cubin: the CPU tests never load it\n")
    return name


@pytest.fixture
def kernel_dir(tmp_path):
    """A bf16-only manifest directory like scripts/aot's, in a temp dir:
    d64/d128, full (ascending, descending, shift) and causal bottom-right
    (ascending, descending, symmetric-shift) plus d64 causal top-left
    descending; deterministic, and one nondeterministic d128 full."""
    d = tmp_path / "kernels"
    d.mkdir()
    for hd in (64, 128):
        for pol in ("ascending", "descending", "shift"):
            write_manifest(str(d), hd, "full", pol)
        for pol in ("ascending", "descending", "symmetric-shift"):
            write_manifest(str(d), hd, "causal", pol, align="bottom_right")
    write_manifest(str(d), 64, "causal", "descending", align="top_left")
    write_manifest(str(d), 128, "full", "descending", det=False)
    return str(d)


@pytest.fixture
def use_kernels(kernel_dir, monkeypatch, native_libs):
    """Point dash_attn at the fixture kernels (fresh runtimes)."""
    import dash_attn
    monkeypatch.setenv("DASH_KERNEL_DIR", kernel_dir)
    dash_attn._reset_runtimes()
    yield kernel_dir
    dash_attn._reset_runtimes()
