"""dash_attn: PyTorch front end of DASH, a deterministic attention backward
for Hopper (sm_90a) built ahead of time by the DASH MLIR compiler.

    import dash_attn
    out = dash_attn.attention(q, k, v, causal=True)          # SDPA drop-in, BHSD, top-left causal
    dq, dk, dv = dash_attn.attention_backward(q, k, v, o, do, lse, causal=True)  # BSHD, bottom-right

attention and attention_backward need torch (imported on first use);
schedule_report, check_backward and available_kernels do not.
"""

from ._runtime import DashArgumentError, DashError, POLICIES, available_kernels
from ._runtime import reset_runtimes as _reset_runtimes
from .schedule import ScheduleReport, schedule_report
from ._check import check_backward
from ._paths import find_kernel_dir as kernel_dir

__version__ = "0.1.0"

__all__ = [
    "attention", "attention_backward", "DashAttentionFunction", "schedule_report",
    "ScheduleReport", "check_backward", "available_kernels", "kernel_dir",
    "DashError", "DashArgumentError", "POLICIES",
]

_TORCH_API = ("attention", "attention_backward", "DashAttentionFunction")


def __getattr__(name):
    # Lazy: the torch-free parts (and CI) must not pay for or need torch.
    if name in _TORCH_API:
        try:
            from . import _torch
        except ImportError as e:  # pragma: no cover - depends on the machine
            raise ImportError("dash_attn.%s needs PyTorch (%s)" % (name, e)) from e
        return getattr(_torch, name)
    raise AttributeError("module 'dash_attn' has no attribute %r" % name)


def __dir__():
    return sorted(list(globals()) + list(_TORCH_API))
