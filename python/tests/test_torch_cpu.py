"""torch-level argument handling that needs no GPU (skips without torch)."""

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed")

import dash_attn  # noqa: E402
from dash_attn import _torch  # noqa: E402


def test_cpu_tensors_are_refused_by_name():
    q = torch.zeros(1, 128, 2, 64, dtype=torch.bfloat16)
    lse = torch.zeros(1, 2, 128)
    with pytest.raises(ValueError, match="^q is on cpu"):
        dash_attn.attention_backward(q, q, q, q, q, lse)
    with pytest.raises(ValueError, match="^q is on cpu"):
        dash_attn.attention(q.transpose(1, 2), q.transpose(1, 2), q.transpose(1, 2))


def test_attention_wants_4d():
    with pytest.raises(ValueError, match=r"^k must be 4-D \[B, H, S, D\]"):
        dash_attn.attention(torch.zeros(1, 2, 8, 64), torch.zeros(2, 8, 64), torch.zeros(1, 2, 8, 64))


def test_kernel_friendly_copies_only_when_needed():
    t = torch.zeros(2, 4, 16, 64, dtype=torch.bfloat16)
    assert _torch._kernel_friendly(t) is t
    assert _torch._kernel_friendly(t.transpose(1, 2)).data_ptr() == t.data_ptr()
    e = torch.zeros(1, 1, 1, 64, dtype=torch.bfloat16).expand(2, 4, 16, 64)  # stride 0
    c = _torch._kernel_friendly(e)
    assert c.is_contiguous() and c.data_ptr() != e.data_ptr()
    s = torch.zeros(2, 4, 16, 128, dtype=torch.bfloat16)[..., ::2]  # head-dim stride 2
    assert _torch._kernel_friendly(s).stride(-1) == 1
