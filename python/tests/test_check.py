"""Argument validation and kernel selection through the C runtime's
dash_attention_bwd_check, on fake tensor metadata (no torch, no GPU)."""

import os

import pytest

import dash_attn
from conftest import REPO, FakeTensor, bshd_inputs, write_manifest

pytestmark = pytest.mark.usefixtures("use_kernels")


def test_import_without_torch_exposes_api():
    for name in ("attention", "attention_backward", "schedule_report", "check_backward"):
        assert name in dir(dash_attn)


def test_kernels_listed(use_kernels):
    kernels = dash_attn.available_kernels()
    assert len(kernels) == 14
    assert any(k.startswith("d128_causal_br_symmetric_shift_det:") for k in kernels)
    assert dash_attn.kernel_dir() == use_kernels


def test_selects_kernel_and_resolves_auto_with_device_props():
    info = dash_attn.check_backward(*bshd_inputs(D=128, Sq=2048, Sk=2048), causal=True,
                                    device_props=(132, 1))
    assert info["kernel"].startswith("d128_causal_br_")
    assert info["policy"] in ("ascending", "descending", "symmetric-shift")
    assert info["num_units"] == 132 and info["num_sms"] == 132
    assert info["block_m"] == 64 and info["threads"] == 256
    assert info["workspace_bytes"] > 0


def test_without_device_auto_stays_unresolved():
    info = dash_attn.check_backward(*bshd_inputs(), causal=False)
    assert info["policy"] == "auto" and info["num_units"] == 0


@pytest.mark.parametrize("schedule", ["ascending", "descending", "shift"])
def test_explicit_schedule(schedule):
    info = dash_attn.check_backward(*bshd_inputs(D=64), schedule=schedule, device_props=(132, 1))
    assert info["kernel"] == "d64_full_%s_det" % schedule
    assert info["policy"] == schedule


def test_nondeterministic_kernel():
    info = dash_attn.check_backward(*bshd_inputs(D=128), schedule="descending",
                                    deterministic=False, device_props=(132, 1))
    assert info["kernel"] == "d128_full_descending_nondet"


def test_bhsd_memory_as_bshd_strides_and_bhsd_layout_agree():
    a = dash_attn.check_backward(*bshd_inputs(bhsd_memory=True), device_props=(132, 1))
    b = dash_attn.check_backward(*bshd_inputs(), device_props=(132, 1))
    B, S, H, D = 2, 256, 4, 64
    bhsd = [FakeTensor((B, H, S, D)) for _ in range(5)] + [FakeTensor((B, H, S), "torch.float32")]
    c = dash_attn.check_backward(*bhsd, layout="bhsd", device_props=(132, 1))
    assert a["kernel"] == b["kernel"] == c["kernel"]


def test_gqa_accepted_and_bad_group_refused():
    dash_attn.check_backward(*bshd_inputs(H=8, Hkv=2), device_props=(132, 1))
    with pytest.raises(ValueError, match=r"heads of q \(8\) must be a multiple of heads of k \(3\)"):
        dash_attn.check_backward(*bshd_inputs(H=8, Hkv=3))


def test_wrong_device():
    q, k, v, o, do, lse = bshd_inputs()
    with pytest.raises(ValueError, match=r"^q is on cpu; dash_attn needs CUDA"):
        dash_attn.check_backward(FakeTensor(q.shape, device="cpu"), k, v, o, do, lse)
    with pytest.raises(ValueError, match=r"^v is on cuda:1 but q is on cuda:0"):
        dash_attn.check_backward(q, k, FakeTensor(v.shape, device="cuda:1"), o, do, lse)


def test_wrong_dtypes():
    q, k, v, o, do, lse = bshd_inputs()
    with pytest.raises(ValueError, match=r"^q.dtype is float32; DASH kernels take bfloat16"):
        dash_attn.check_backward(*bshd_inputs(dtype="torch.float32"))
    with pytest.raises(ValueError, match=r"^k.dtype is float16 but q.dtype is bfloat16"):
        dash_attn.check_backward(q, FakeTensor(k.shape, "torch.float16"), v, o, do, lse)
    with pytest.raises(ValueError, match=r"^lse.dtype must be float32"):
        dash_attn.check_backward(q, k, v, o, do, FakeTensor(lse.shape, "torch.bfloat16"))


def test_float16_has_no_kernel_yet():
    with pytest.raises(RuntimeError, match="float16 kernels are not compiled yet") as e:
        dash_attn.check_backward(*bshd_inputs(dtype="torch.float16"))
    assert e.value.status == "DASH_ERROR_NO_KERNEL"
    assert not isinstance(e.value, ValueError)


def test_wrong_rank():
    q, k, v, o, do, lse = bshd_inputs()
    with pytest.raises(ValueError, match=r"^o must be 4-D \[B, S_q, H, D\]"):
        dash_attn.check_backward(q, k, v, FakeTensor((2, 256, 256)), do, lse)
    with pytest.raises(ValueError, match=r"^lse must be 3-D \[B, H, S_q\]"):
        dash_attn.check_backward(q, k, v, o, do, FakeTensor((2, 4, 256, 1), "torch.float32"))


def test_non_contiguous_head_dim():
    q, k, v, o, do, lse = bshd_inputs()
    bad = FakeTensor(do.shape, strides=(256 * 4 * 128, 4 * 128, 128, 2))
    with pytest.raises(ValueError, match=r"^do has a non-contiguous head dim \(stride\(-1\) = 2\)"):
        dash_attn.check_backward(q, k, v, o, bad, lse)


def test_unsupported_head_dim():
    with pytest.raises(dash_attn.DashArgumentError, match="head_dim 96 is not supported") as e:
        dash_attn.check_backward(*bshd_inputs(D=96))
    assert isinstance(e.value, ValueError) and e.value.status == "DASH_ERROR_UNSUPPORTED"


def test_shape_mismatch_names_the_argument():
    q, k, v, o, do, lse = bshd_inputs(Sk=512)
    with pytest.raises(ValueError, match=r"v.shape\[1\] \(seqlen_k\) = 256 does not match"):
        dash_attn.check_backward(q, k, FakeTensor((2, 256, 4, 64)), o, do, lse)
    with pytest.raises(ValueError, match=r"lse.shape\[2\] \(seqlen\) = 128"):
        dash_attn.check_backward(q, k, v, o, do, FakeTensor((2, 4, 128), "torch.float32"))


def test_bhsd_messages_use_the_callers_dims():
    B, S, H, D = 2, 256, 4, 64
    t = [FakeTensor((B, H, S, D)) for _ in range(5)] + [FakeTensor((B, H, S), "torch.float32")]
    t[4] = FakeTensor((B, H, 128, D))  # do: wrong S_q, which is dim 2 in BHSD
    with pytest.raises(ValueError, match=r"do.shape\[2\] \(seqlen\) = 128"):
        dash_attn.check_backward(*t, layout="bhsd")


def test_strides_not_16_byte_multiples():
    q, k, v, o, do, lse = bshd_inputs(D=64)
    bad = FakeTensor(q.shape, strides=(256 * 4 * 68, 4 * 68, 68 + 1, 1))
    with pytest.raises(ValueError, match=r"q.strides\[2\] = 69 elements is not a multiple of 16 bytes"):
        dash_attn.check_backward(bad, k, v, o, do, lse)


def test_missing_kernel_lists_what_exists():
    # top_left with S_q != S_k exists only for d64 descending in the fixture
    with pytest.raises(RuntimeError, match="no kernel for configuration") as e:
        dash_attn.check_backward(*bshd_inputs(D=128, Sq=128, Sk=256), causal=True,
                                 causal_align="top_left")
    assert "available:" in str(e.value) and e.value.status == "DASH_ERROR_NO_KERNEL"
    info = dash_attn.check_backward(*bshd_inputs(D=64, Sq=128, Sk=256), causal=True,
                                    causal_align="top_left", device_props=(132, 1))
    assert info["kernel"] == "d64_causal_tl_descending_det"


def test_equal_lengths_use_either_alignment():
    info = dash_attn.check_backward(*bshd_inputs(D=128), causal=True, causal_align="top_left",
                                    schedule="descending", device_props=(132, 1))
    assert info["kernel"] == "d128_causal_br_descending_det"


def test_schedule_argument():
    with pytest.raises(ValueError, match="schedule 'fastest' is unknown"):
        dash_attn.check_backward(*bshd_inputs(), schedule="fastest")
    # shift is full-mask only: there is no causal shift kernel to select
    with pytest.raises(RuntimeError, match="causal bottom_right shift det"):
        dash_attn.check_backward(*bshd_inputs(), causal=True, schedule="shift")


def test_causal_align_and_layout_arguments():
    with pytest.raises(ValueError, match="causal_align must be"):
        dash_attn.check_backward(*bshd_inputs(), causal=True, causal_align="center")
    with pytest.raises(ValueError, match="layout must be"):
        dash_attn.check_backward(*bshd_inputs(), layout="sbhd")


@pytest.mark.parametrize("scale", [-1.0, 0.0, float("nan"), float("inf")])
def test_bad_scale(scale):
    with pytest.raises(ValueError, match="scale must be finite and > 0"):
        dash_attn.check_backward(*bshd_inputs(), scale=scale)


def test_not_a_tensor():
    q, k, v, o, do, lse = bshd_inputs()
    with pytest.raises(TypeError, match="^k must be a torch.Tensor, got list"):
        dash_attn.check_backward(q, [1, 2], v, o, do, lse)


def test_too_many_units_is_an_argument_error():
    # 1 CTA per SM x 4 SMs: fine; the model resolves G = 4
    info = dash_attn.check_backward(*bshd_inputs(), device_props=(4, 1))
    assert info["num_units"] == 4


def test_runtime_fixture_of_the_c_tests_loads(monkeypatch):
    d = os.path.join(REPO, "unittests", "Runtime", "Inputs", "kernels")
    if not os.path.isdir(d):
        pytest.skip("no unittests/Runtime/Inputs/kernels in this checkout")
    info = dash_attn.check_backward(*bshd_inputs(D=64), schedule="ascending", kernel_dir=d,
                                    device_props=(132, 1))
    assert info["kernel"] == "d64_full_ascending_det"


# ---------------------------------------------------------------------------
# Kernel and library lookup
# ---------------------------------------------------------------------------

def test_no_kernels_error_says_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.setenv("DASH_KERNEL_DIR", str(tmp_path))
    dash_attn._reset_runtimes()
    with pytest.raises(RuntimeError) as e:
        dash_attn.check_backward(*bshd_inputs())
    msg = str(e.value)
    assert "no DASH kernels found" in msg and str(tmp_path) in msg
    assert "$DASH_KERNEL_DIR" in msg and "scripts/aot" in msg


def test_bad_manifest_names_the_file(tmp_path, monkeypatch):
    write_manifest(str(tmp_path), 64, "full", "ascending")
    (tmp_path / "zz_broken.json").write_text("{ not json")
    monkeypatch.setenv("DASH_KERNEL_DIR", str(tmp_path))
    dash_attn._reset_runtimes()
    with pytest.raises(dash_attn.DashError, match=r"zz_broken.json: invalid JSON") as e:
        dash_attn.available_kernels()
    assert e.value.status == "DASH_ERROR_MANIFEST"


def test_library_lookup_error(tmp_path, monkeypatch):
    from dash_attn import _paths
    monkeypatch.setenv("DASH_LIB_DIR", str(tmp_path))
    with pytest.raises(RuntimeError, match=r"cannot find libdash_runtime.so; looked at: .*\$DASH_LIB_DIR"):
        _paths.find_library("dash_runtime")


def test_kernel_lookup_order(tmp_path, monkeypatch):
    from dash_attn import _paths
    monkeypatch.delenv("DASH_KERNEL_DIR", raising=False)
    cands = _paths.kernel_dir_candidates()
    assert cands[0][0] == "package data"
    assert any(d == os.path.join(REPO, "build", "kernels") for _, d in cands)
    monkeypatch.setenv("DASH_KERNEL_DIR", str(tmp_path))
    assert _paths.kernel_dir_candidates() == [("$DASH_KERNEL_DIR", str(tmp_path))]
