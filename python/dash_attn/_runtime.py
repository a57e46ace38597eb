"""ctypes binding of the C runtime (include/dash/Runtime/Runtime.h) and the
torch-free half of attention_backward: argument checks on duck-typed tensor
metadata, the C check, and the launch.

Nothing here imports torch. Anything with .shape, .stride(), .data_ptr(),
.dtype and .device (a torch.Tensor, or a small fake in the tests) is a
tensor; dtype and device are read through str() ("torch.bfloat16" ->
"bfloat16", "cuda:0").
"""

import ctypes
import math
import re
import threading

from . import _paths

# ---------------------------------------------------------------------------
# The C ABI (keep in sync with include/dash/Runtime/Runtime.h)
# ---------------------------------------------------------------------------

SUCCESS = 0
INVALID_ARGUMENT = 1
UNSUPPORTED = 2
NO_KERNEL = 3
ILLEGAL_SCHEDULE = 4
TOO_MANY_UNITS = 5
MANIFEST = 6
NO_DRIVER = 7
DRIVER = 8
OUT_OF_MEMORY = 9
HANG = 10  # a debug kernel reported a stuck semaphore wait

DTYPE_BF16, DTYPE_F16, DTYPE_F32 = 0, 1, 2
ALIGN_DEFAULT, ALIGN_BOTTOM_RIGHT, ALIGN_TOP_LEFT = 0, 1, 2

_DTYPES = {"bfloat16": DTYPE_BF16, "float16": DTYPE_F16, "float32": DTYPE_F32}
_ALIGNS = {"bottom_right": ALIGN_BOTTOM_RIGHT, "top_left": ALIGN_TOP_LEFT}
POLICIES = ("auto", "ascending", "spt", "descending", "shift", "symmetric-shift")


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("rank", ctypes.c_int32),
                ("shape", ctypes.c_int64 * 4), ("strides", ctypes.c_int64 * 4),
                ("dtype", ctypes.c_int)]


class _Args(ctypes.Structure):
    _fields_ = [(n, _Tensor) for n in ("q", "k", "v", "o", "dO", "lse", "dq", "dk", "dv")] + [
        ("causal", ctypes.c_int32), ("align", ctypes.c_int), ("scale", ctypes.c_float),
        ("deterministic", ctypes.c_int32), ("policy", ctypes.c_int),
        ("num_units", ctypes.c_int64)]


class _Info(ctypes.Structure):
    _fields_ = [("policy", ctypes.c_int), ("num_units", ctypes.c_int64),
                ("max_units", ctypes.c_int64), ("blocks_per_sm", ctypes.c_int32),
                ("num_sms", ctypes.c_int32), ("workspace_bytes", ctypes.c_int64),
                ("block_m", ctypes.c_int32), ("block_n", ctypes.c_int32),
                ("threads", ctypes.c_int32), ("main_shared_bytes", ctypes.c_int64),
                ("kernel_name", ctypes.c_char * 128)]


class _Props(ctypes.Structure):
    _fields_ = [("num_sms", ctypes.c_int32), ("blocks_per_sm", ctypes.c_int32)]


_lib = None
_lib_lock = threading.Lock()


def lib():
    """The loaded libdash_runtime.so (see _paths.find_library)."""
    global _lib
    with _lib_lock:
        if _lib is None:
            L = ctypes.CDLL(_paths.find_library("dash_runtime"))
            P = ctypes.POINTER
            vp = ctypes.c_void_p
            L.dash_runtime_create.argtypes = [ctypes.c_char_p, P(vp)]
            L.dash_runtime_create.restype = ctypes.c_int
            L.dash_runtime_destroy.argtypes = [vp]
            L.dash_runtime_destroy.restype = None
            L.dash_runtime_last_error.argtypes = [vp]
            L.dash_runtime_last_error.restype = ctypes.c_char_p
            L.dash_status_name.argtypes = [ctypes.c_int]
            L.dash_status_name.restype = ctypes.c_char_p
            L.dash_runtime_set_device_props.argtypes = [vp, P(_Props)]
            L.dash_runtime_set_device_props.restype = ctypes.c_int
            L.dash_runtime_num_kernels.argtypes = [vp]
            L.dash_runtime_num_kernels.restype = ctypes.c_int32
            L.dash_runtime_kernel_description.argtypes = [vp, ctypes.c_int32]
            L.dash_runtime_kernel_description.restype = ctypes.c_char_p
            L.dash_attention_bwd_check.argtypes = [vp, P(_Args), P(_Info)]
            L.dash_attention_bwd_check.restype = ctypes.c_int
            L.dash_attention_bwd.argtypes = [vp, P(_Args), vp, P(_Info)]
            L.dash_attention_bwd.restype = ctypes.c_int
            L.dash_policy_name.argtypes = [ctypes.c_int]
            L.dash_policy_name.restype = ctypes.c_char_p
            L.dash_policy_parse.argtypes = [ctypes.c_char_p, P(ctypes.c_int)]
            L.dash_policy_parse.restype = ctypes.c_int32
            _lib = L
        return _lib


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------

class DashError(RuntimeError):
    """A DASH runtime failure (missing kernel, bad manifest, driver error).
    `status` is the C dash_status name, e.g. "DASH_ERROR_NO_KERNEL"."""

    def __init__(self, msg, status=None):
        super().__init__(msg)
        self.status = status


class DashArgumentError(DashError, ValueError):
    """An argument DASH refuses (shape, stride, dtype, head dim, schedule).
    A ValueError, and a DashError for code that catches those."""


# Statuses that describe the caller's arguments, not the installation.
_ARG_STATUSES = (INVALID_ARGUMENT, UNSUPPORTED, ILLEGAL_SCHEDULE, TOO_MANY_UNITS)


def _raise_status(st, what, msg):
    name = lib().dash_status_name(st).decode()
    cls = DashArgumentError if st in _ARG_STATUSES else DashError
    raise cls("%s: %s (%s)" % (what, msg, name), status=name)


# ---------------------------------------------------------------------------
# Runtime objects: one per CUDA device (the C runtime caches workspace per
# context and stream inside it)
# ---------------------------------------------------------------------------

class Runtime:
    def __init__(self, kernel_dir=None, device_props=None):
        self.kernel_dir = kernel_dir or _paths.find_kernel_dir()
        L = lib()
        h = ctypes.c_void_p()
        st = L.dash_runtime_create(self.kernel_dir.encode(), ctypes.byref(h))
        if st != SUCCESS:
            _raise_status(st, "dash_attn: loading kernels from %s" % self.kernel_dir,
                          L.dash_runtime_last_error(None).decode())
        self._h = h
        self._L = L  # keep the library alive until __del__
        if device_props is not None:
            num_sms, blocks = device_props
            p = _Props(int(num_sms), int(blocks))
            st = L.dash_runtime_set_device_props(h, ctypes.byref(p))
            if st != SUCCESS:
                _raise_status(st, "dash_attn: device_props", self.last_error())

    def __del__(self):
        h = getattr(self, "_h", None)
        if h:
            self._L.dash_runtime_destroy(h)
            self._h = None

    def last_error(self):
        return self._L.dash_runtime_last_error(self._h).decode()

    def kernels(self):
        n = self._L.dash_runtime_num_kernels(self._h)
        return [self._L.dash_runtime_kernel_description(self._h, i).decode()
                for i in range(n)]

    def check(self, args):
        info = _Info()
        st = self._L.dash_attention_bwd_check(self._h, ctypes.byref(args), ctypes.byref(info))
        return st, info

    def launch(self, args, stream):
        info = _Info()
        st = self._L.dash_attention_bwd(self._h, ctypes.byref(args), ctypes.c_void_p(stream),
                                        ctypes.byref(info))
        return st, info


_runtimes = {}
_runtimes_lock = threading.Lock()


def get_runtime(device_index):
    """The runtime of one CUDA device, created on first use."""
    with _runtimes_lock:
        rt = _runtimes.get(device_index)
        if rt is None:
            rt = _runtimes[device_index] = Runtime()
        return rt


def reset_runtimes():
    """Drops every cached runtime (their workspace too): for tests, or after
    changing DASH_KERNEL_DIR."""
    with _runtimes_lock:
        _runtimes.clear()


def available_kernels():
    """Descriptions of the kernels the runtime would load, e.g.
    'd128_causal_br_descending_det: d128 bf16 causal bottom_right descending det'."""
    return Runtime().kernels()


# ---------------------------------------------------------------------------
# Argument checks and the dash_bwd_args struct
# ---------------------------------------------------------------------------

class TensorMeta:
    """What DASH needs to know about a tensor."""

    __slots__ = ("name", "ptr", "shape", "strides", "dtype", "device")

    def __init__(self, name, ptr, shape, strides, dtype, device):
        self.name, self.ptr = name, int(ptr)
        self.shape, self.strides = tuple(shape), tuple(strides)
        self.dtype, self.device = dtype, device

    @classmethod
    def of(cls, x, name):
        if not (hasattr(x, "data_ptr") and hasattr(x, "shape") and hasattr(x, "stride")):
            raise TypeError("%s must be a torch.Tensor, got %s" % (name, type(x).__name__))
        # str() of a dtype or device is the slow part of a call's host path
        # (nine tensors per call): memoised per object.
        dname = _memo(_DTYPE_NAMES, x.dtype, lambda d: str(d).replace("torch.", ""))
        dev = _memo(_DEVICE_NAMES, x.device, str)
        return cls(name, x.data_ptr(), map(int, x.shape), map(int, x.stride()),
                   dname, dev)


def _memo(table, key, make):
    """table[key], made by make(key) the first time."""
    value = table.get(key)
    if value is None:
        value = table[key] = make(key)
    return value


_DTYPE_NAMES = {}
_DEVICE_NAMES = {}


_NAMES4 = ("q", "k", "v", "o", "do")
_DIMS = {"bshd": ("[B, S_q, H, D]", "[B, S_k, H_kv, D]"),
         "bhsd": ("[B, H, S_q, D]", "[B, H_kv, S_k, D]")}


def normalize_align(causal_align):
    a = str(causal_align).replace("-", "_")
    if a not in _ALIGNS:
        raise ValueError("causal_align must be 'bottom_right' (FlashAttention) or "
                         "'top_left' (PyTorch SDPA is_causal), got %r" % (causal_align,))
    return a


def normalize_layout(layout):
    lay = str(layout).lower()
    if lay not in _DIMS:
        raise ValueError("layout must be 'bshd' ([B, S, H, D], FlashAttention) or "
                         "'bhsd' ([B, H, S, D], SDPA), got %r" % (layout,))
    return lay


def parse_schedule(schedule):
    if not isinstance(schedule, str):
        raise ValueError("schedule must be a string (%s), got %r"
                         % (", ".join(POLICIES), schedule))
    def parse(name):
        out = ctypes.c_int()
        if not lib().dash_policy_parse(name.encode(), ctypes.byref(out)):
            raise ValueError("schedule %r is unknown; use one of %s"
                             % (name, ", ".join(POLICIES)))
        return out.value
    return _memo(_POLICY_CODES, schedule, parse)


_POLICY_CODES = {}  # the C parser's answers for the names it accepted


def check_inputs(metas, layout):
    """The cheap checks, before the C runtime sees anything: device, dtype,
    rank, head-dim stride. metas: TensorMeta of q, k, v, o, do, lse (and
    optionally dq, dk, dv)."""
    q = metas[0]
    qdims, kdims = _DIMS[layout]
    for m in metas:
        if not m.device.startswith("cuda"):
            raise ValueError("%s is on %s; dash_attn needs CUDA tensors (move them "
                             "with .cuda())" % (m.name, m.device))
        if m.device != q.device:
            raise ValueError("%s is on %s but q is on %s; all tensors must be on one "
                             "device" % (m.name, m.device, q.device))
    if q.dtype not in ("bfloat16", "float16"):
        raise ValueError("q.dtype is %s; DASH kernels take bfloat16 (float16 kernels "
                         "are not compiled yet)" % q.dtype)
    for m in metas:
        if m.name == "lse":
            if m.dtype != "float32":
                raise ValueError("lse.dtype must be float32 (log-sum-exp of the scaled "
                                 "scores), got %s" % m.dtype)
            if len(m.shape) != 3:
                raise ValueError("lse must be 3-D [B, H, S_q], got shape %s"
                                 % (list(m.shape),))
            continue
        if m.dtype != q.dtype:
            raise ValueError("%s.dtype is %s but q.dtype is %s; q, k, v, o, do (and "
                             "the gradients) share one dtype" % (m.name, m.dtype, q.dtype))
        if len(m.shape) != 4:
            dims = kdims if m.name in ("k", "v", "dk", "dv") else qdims
            raise ValueError("%s must be 4-D %s (layout=%r), got shape %s"
                             % (m.name, dims, layout, list(m.shape)))
        if m.shape[3] > 1 and m.strides[3] != 1:
            raise ValueError("%s has a non-contiguous head dim (stride(-1) = %d); the "
                             "kernels need stride 1 there: pass %s.contiguous()"
                             % (m.name, m.strides[3], m.name))


def _to_c(m, layout):
    t = _Tensor()
    t.data = m.ptr or None
    t.rank = len(m.shape)
    shape, strides = list(m.shape), list(m.strides)
    if t.rank == 4 and layout == "bhsd":  # the runtime's logical order is BSHD
        shape = [shape[0], shape[2], shape[1], shape[3]]
        strides = [strides[0], strides[2], strides[1], strides[3]]
    for i in range(t.rank):
        t.shape[i], t.strides[i] = shape[i], strides[i]
    t.dtype = _DTYPES.get(m.dtype, -1)
    return t


def _user_message(msg, layout):
    """Runtime messages in the caller's names: 'do' not 'dO', and for
    layout='bhsd' the caller's dimension numbers (the runtime counts BSHD)."""
    msg = re.sub(r"\bdO\b", "do", msg)
    if layout == "bhsd":
        msg = re.sub(r"\b(q|k|v|o|do|dq|dk|dv)\.(shape|strides)\[([12])\]",
                     lambda mo: "%s.%s[%d]" % (mo.group(1), mo.group(2),
                                               3 - int(mo.group(3))), msg)
    return msg


def build_args(metas, *, causal, causal_align, scale, deterministic, schedule, layout):
    """dash_bwd_args from TensorMeta of q, k, v, o, do, lse, dq, dk, dv."""
    a = _Args()
    for field, m in zip(_ARG_FIELDS, metas):
        setattr(a, field, _to_c(m, layout))
    a.causal = 1 if causal else 0
    a.align = _ALIGNS[causal_align] if causal else ALIGN_DEFAULT
    if scale is None:
        scale = 1.0 / math.sqrt(metas[0].shape[3])
    scale = float(scale)
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError("scale must be finite and > 0, got %r" % (scale,))
    a.scale = scale
    a.deterministic = 1 if deterministic else 0
    a.policy = parse_schedule(schedule)
    a.num_units = 0  # occupancy x SMs
    return a


_ARG_FIELDS = ("q", "k", "v", "o", "dO", "lse", "dq", "dk", "dv")
# The caller's names of the six inputs and three gradients, in that order.
INPUT_NAMES = ("q", "k", "v", "o", "do", "lse")
GRAD_NAMES = ("dq", "dk", "dv")


def metas_of(tensors, names=INPUT_NAMES + GRAD_NAMES):
    """TensorMeta of the inputs (and gradients, if given), named in order."""
    return [TensorMeta.of(t, n) for t, n in zip(tensors, names)]


def args_with_pointers(template, tensors):
    """A dash_bwd_args copied from `template` (bytes of one that launched)
    with the data pointers of q, k, v, o, do, lse, dq, dk, dv replaced."""
    a = _Args.from_buffer_copy(template)
    for field, t in zip(_ARG_FIELDS, tensors):
        getattr(a, field).data = t.data_ptr() or None
    return a


def info_dict(info):
    L = lib()
    return {
        "kernel": info.kernel_name.decode(),
        "policy": L.dash_policy_name(info.policy).decode(),
        "num_units": info.num_units, "max_units": info.max_units,
        "blocks_per_sm": info.blocks_per_sm, "num_sms": info.num_sms,
        "workspace_bytes": info.workspace_bytes, "block_m": info.block_m,
        "block_n": info.block_n, "threads": info.threads,
        "main_shared_bytes": info.main_shared_bytes,
    }


def raise_for(st, rt, metas, layout, what):
    msg = _user_message(rt.last_error(), layout)
    if st == NO_KERNEL and metas[0].dtype == "float16":
        msg += " -- float16 kernels are not compiled yet: pass bfloat16 tensors"
    if st == NO_DRIVER:
        msg += " -- is the NVIDIA driver installed (libcuda.so.1)?"
    _raise_status(st, what, msg)


def run_check(metas, args, layout, rt):
    """dash_attention_bwd_check: the C runtime's shape and kernel rules, no
    driver call. Returns the resolved configuration as a dict."""
    st, info = rt.check(args)
    if st != SUCCESS:
        raise_for(st, rt, metas, layout, "dash_attn.attention_backward")
    return info_dict(info)
