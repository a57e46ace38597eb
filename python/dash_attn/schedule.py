"""schedule_report(): the schedule model's report from Python, computed by
lib/Schedule through its C API (libdash_schedule_c.so). Same fields as
`dash-sched --json`; no torch, no GPU."""

import ctypes
import json
import math
import threading

from . import _paths


class _Options(ctypes.Structure):
    # include/dash/Schedule/CAPI.h, DASH_SCHED_ABI_VERSION 2
    _fields_ = [("batch", ctypes.c_int64), ("heads", ctypes.c_int64),
                ("heads_kv", ctypes.c_int64), ("seqlen", ctypes.c_int64),
                ("seqlen_k", ctypes.c_int64), ("hdim", ctypes.c_int64),
                ("causal", ctypes.c_int32), ("top_left", ctypes.c_int32),
                ("block_m", ctypes.c_int64), ("block_n", ctypes.c_int64),
                ("sms", ctypes.c_int64), ("resident_sms", ctypes.c_int64),
                ("c", ctypes.c_double), ("r", ctypes.c_double),
                ("policy", ctypes.c_char_p), ("detail", ctypes.c_int32),
                ("svg", ctypes.c_int32), ("persistent", ctypes.c_int32),
                ("staging", ctypes.c_int64), ("read_fraction", ctypes.c_double)]


_ABI_VERSION = 2
_lib = None
_lock = threading.Lock()


def _load():
    global _lib
    with _lock:
        if _lib is None:
            L = ctypes.CDLL(_paths.find_library("dash_schedule_c"))
            L.dash_sched_abi_version.restype = ctypes.c_int32
            if L.dash_sched_abi_version() != _ABI_VERSION:
                raise RuntimeError("dash_attn: libdash_schedule_c.so has ABI version %d, "
                                   "this package expects %d; rebuild or reinstall"
                                   % (L.dash_sched_abi_version(), _ABI_VERSION))
            L.dash_sched_options_init.argtypes = [ctypes.POINTER(_Options)]
            L.dash_sched_options_init.restype = None
            cpp = ctypes.POINTER(ctypes.c_void_p)  # char ** kept as void* to free it
            L.dash_sched_report.argtypes = [ctypes.POINTER(_Options), cpp, cpp, cpp]
            L.dash_sched_report.restype = ctypes.c_int32
            L.dash_sched_free.argtypes = [ctypes.c_void_p]
            L.dash_sched_free.restype = None
            _lib = L
        return _lib


def _take(L, p):
    """Copy a C string out and free it with the library's free function."""
    if not p.value:
        return None
    try:
        return ctypes.string_at(p.value).decode("utf-8")
    finally:
        L.dash_sched_free(p.value)


class ScheduleReport:
    """The model's verdict for one problem.

    data      the dict `dash-sched --json` prints: "problem", "schedules"
              (name, model, legal, reason, makespan, critical_path, idle,
              work_bound, closed_form; units/ranks with detail=True), "auto"
    auto      name of the schedule `auto` picks
    svg       Gantt chart (SVG text) when asked for with svg=True, else None
    str(r) / r.table()  the table dash-sched prints
    """

    def __init__(self, data, svg=None):
        self.data = data
        self.svg = svg

    @property
    def problem(self):
        return self.data["problem"]

    @property
    def schedules(self):
        return self.data["schedules"]

    @property
    def auto(self):
        return self.data["auto"]

    def __getitem__(self, name):
        """The row of one schedule by name."""
        for row in self.schedules:
            if row["name"] == name:
                return row
        raise KeyError(name)

    def save_svg(self, path):
        if self.svg is None:
            raise ValueError("no SVG in this report: call schedule_report(..., svg=True)")
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.svg)

    def table(self):
        p = self.problem
        head = "problem: b=%d h=%d h_kv=%d sq=%d sk=%d d=%d mask=%s" % (
            p["batch"], p["heads"], p["heads_kv"], p["seqlen"], p["seqlen_k"],
            p["hdim"], p["mask"])
        if p["mask"] == "causal":
            head += " (%s)" % p["align"]
        lines = [head, "tiles: %dx%d -> M=%d Q tiles, N=%d KV tiles, %d tasks" % (
            p["block_m"], p["block_n"], p["q_tiles"], p["kv_tiles"], p["tasks"])]
        grid = "grid: G=%d SMs" % p["sms"]
        if p["resident_sms"] != p["sms"]:
            grid += " (%d resident)" % p["resident_sms"]
        lines += [grid + "; costs per task: c=%s r=%s" % (_num(p["c"]), _num(p["r"])), "",
                  "  %-16s %-6s %12s %12s %7s  %s" % ("schedule", "legal", "makespan",
                                                      "crit.path", "idle%", "model")]
        for row in self.schedules:
            mark = "*" if row["name"] == self.auto else " "
            if not row["legal"]:
                lines.append("%s %-16s no: %s" % (mark, row["name"], row["reason"]))
                continue
            model = ("persistent grid of G units" if row["model"] == "persistent"
                     else "FA3 launch: CTA per KV tile, first free SM")
            lines.append("%s %-16s %-6s %12s %12s %6.1f%%  %s" % (
                mark, row["name"], "yes", _num(row["makespan"]),
                _num(row["critical_path"]), row["idle"] * 100, model))
        # No schedule beats total work spread evenly over the SMs.
        ideal = p["tasks"] * (p["c"] + p["r"]) / p["resident_sms"]
        best = [row for row in self.schedules if row["name"] == self.auto]
        tail = "auto: %s" % self.auto
        if best and best[0]["legal"]:
            tail += " (makespan %s; work/SMs %s)" % (_num(best[0]["makespan"]), _num(ideal))
        lines += ["", tail]
        return "\n".join(lines)

    def __str__(self):
        return self.table()

    def __repr__(self):
        p = self.problem
        return "<ScheduleReport %s sq=%d sk=%d d=%d auto=%s>" % (
            p["mask"], p["seqlen"], p["seqlen_k"], p["hdim"], self.auto)


def _num(v):
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "inf"
    return "%.10g" % v


def schedule_report(*, seqlen=4096, seqlen_k=None, heads=16, heads_kv=None, batch=1,
                    hdim=128, causal=False, causal_align="bottom_right", block_m=None,
                    block_n=None, sms=132, resident_sms=None, c=1.0, r=0.25,
                    policy=None, detail=False, svg=False, persistent=False,
                    staging=0, read_fraction=None):
    """Model every tile-order schedule of one attention-backward problem (the
    same code and defaults as `dash-sched`); returns a ScheduleReport.

    causal_align applies to causal=True: "bottom_right" (FlashAttention,
    default, as in attention_backward) or "top_left" (SDPA is_causal, as in
    attention). block_m/block_n default to FA3's tiles, as dash-sched's (the
    bundled WGMMA kernels use 64x128 at hdim 128 and 128x128 at hdim 64:
    pass them to model exactly what runs); sms
    is G, the persistent grid (132 on H100/H200 SXM); policy restricts the
    rows to one schedule; detail adds per-unit work lists and per-row ranks;
    svg=True also returns the Gantt chart. persistent=True runs every
    schedule as the persistent grid DASH's kernels use (dash-sched --launch
    persistent); staging=B > 0 selects the staged model, B dQ staging buffers
    per unit (dash-sched --staging; read_fraction as --read-fraction): with
    the manifests' c, r, it is the model the runtime's auto uses. Bad values
    raise ValueError with dash-sched's message."""
    align = str(causal_align).replace("-", "_")
    if align not in ("bottom_right", "top_left"):
        raise ValueError("causal_align must be 'bottom_right' or 'top_left', got %r"
                         % (causal_align,))
    L = _load()
    o = _Options()
    L.dash_sched_options_init(ctypes.byref(o))

    def as_int(name, v, zero_ok=False):
        if v is None:
            return 0
        if isinstance(v, bool) or not isinstance(v, int) and not (
                hasattr(v, "__index__")):
            raise ValueError("%s must be an integer, got %r" % (name, v))
        v = int(v)
        if v < 0 or (v == 0 and not zero_ok) or v >= 2 ** 62:
            raise ValueError("%s must be a positive integer, got %d" % (name, v))
        return v

    o.batch, o.heads, o.seqlen = as_int("batch", batch), as_int("heads", heads), \
        as_int("seqlen", seqlen)
    o.hdim, o.sms = as_int("hdim", hdim), as_int("sms", sms)
    o.heads_kv, o.seqlen_k = as_int("heads_kv", heads_kv), as_int("seqlen_k", seqlen_k)
    o.block_m, o.block_n = as_int("block_m", block_m), as_int("block_n", block_n)
    o.resident_sms = as_int("resident_sms", resident_sms)
    o.causal = 1 if causal else 0
    o.top_left = 1 if align == "top_left" else 0
    o.c, o.r = float(c), float(r)
    o.persistent = 1 if persistent else 0
    if isinstance(staging, bool) or not isinstance(staging, int) or not 0 <= staging <= 8:
        raise ValueError("staging must be an integer in [0, 8], got %r" % (staging,))
    o.staging = staging
    o.read_fraction = 0.0 if read_fraction is None else float(read_fraction)
    policy_b = policy.encode() if policy else None
    o.policy = policy_b
    o.detail = 1 if detail else 0
    o.svg = 1 if svg else 0
    js, sv, err = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    rc = L.dash_sched_report(ctypes.byref(o), ctypes.byref(js), ctypes.byref(sv),
                             ctypes.byref(err))
    js_s, sv_s, err_s = _take(L, js), _take(L, sv), _take(L, err)
    if rc != 0:
        raise ValueError("dash_attn.schedule_report: %s" % (err_s or "error %d" % rc))
    return ScheduleReport(json.loads(js_s), sv_s)
