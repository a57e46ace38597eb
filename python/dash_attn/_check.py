"""check_backward(): attention_backward's validation and kernel selection
without launching anything (no torch, no GPU, no driver call)."""

from . import _runtime as R


class _Like:
    """Metadata of a gradient the launch would allocate (empty_like)."""

    def __init__(self, m, ptr):
        self.shape, self._st, self.dtype, self.device, self._ptr = (
            m.shape, m.strides, m.dtype, m.device, ptr)

    def stride(self):
        return self._st

    def data_ptr(self):
        return self._ptr


def check_backward(q, k, v, o, do, lse, *, causal=False, scale=None, deterministic=True,
                   schedule="auto", causal_align="bottom_right", layout="bshd",
                   device_props=None, kernel_dir=None):
    """Validate attention_backward's arguments exactly as a launch would and
    say which kernel would run, without running it.

    Tensors may be torch tensors or anything with .shape, .stride(),
    .data_ptr(), .dtype and .device. The checks are the cheap Python ones
    (device, dtype, rank, head-dim stride) and then the C runtime's
    dash_attention_bwd_check (shapes, strides, GQA, head dim, kernel
    availability, schedule legality). device_props=(num_sms, blocks_per_sm)
    models a device so the grid size G and schedule="auto" resolve; without
    it (and before any launch) "policy" may come back as "auto" and
    "num_units" as 0. kernel_dir overrides the kernel lookup.

    Returns a dict: kernel, policy, num_units, max_units, blocks_per_sm,
    num_sms, workspace_bytes, block_m, block_n, threads, main_shared_bytes.
    Raises what attention_backward raises.
    """
    causal_align = R.normalize_align(causal_align)
    layout = R.normalize_layout(layout)
    metas = R.metas_of((q, k, v, o, do, lse))
    R.check_inputs(metas, layout)
    # Gradients like q, k, v at distinct (fake, aligned) addresses.
    for i, n in enumerate(("dq", "dk", "dv")):
        metas.append(R.TensorMeta.of(_Like(metas[i], 16 * (i + 1)), n))
    args = R.build_args(metas, causal=causal, causal_align=causal_align, scale=scale,
                        deterministic=deterministic, schedule=schedule, layout=layout)
    if device_props is None and kernel_dir is None:
        dev = metas[0].device
        index = int(dev.split(":")[1]) if ":" in dev else 0
        rt = R.get_runtime(index)
    else:
        # A private runtime: injected device limits must not leak into launches.
        rt = R.Runtime(kernel_dir=kernel_dir, device_props=device_props)
    return R.run_check(metas, args, layout, rt)
