"""bench/fa3_peer.py: loading FlashAttention-3's peer library and marshalling
a call, driven by a stand-in library built here with the C compiler (no
GPU, no FA3 sources); and the built peer's shape coverage where one exists
($DASH_FA3_LIB or build/fa3-peer, never in CI)."""

import ctypes
import os
import shutil
import sys
import subprocess

import pytest

import bench_scripts

# The peer's two entry points with its signatures; the call's arguments
# are kept for the test to read back, and a negative scale makes it fail.
STAND_IN = r"""
#include <stddef.h>
#include <stdint.h>
size_t dash_fa3_bwd_workspace_bytes(int d, int causal, int b, int h, int s) {
  if (d != 64 && d != 128) return 0;
  return (size_t)(d * 1000 + causal * 100 + b + h + s);
}
long long last[24];
int dash_fa3_bwd(int d, int causal, int det, int b, int h, int s,
                 const void *q, const void *k, const void *v, const void *o,
                 const void *dout, const float *lse, void *dq, void *dk, void *dv,
                 int64_t bs, int64_t rs, int64_t hs, float scale, void *ws,
                 size_t wsb, int sms, void *stream) {
  long long a[24] = {d, causal, det, b, h, s, (long long)q, (long long)k,
                     (long long)v, (long long)o, (long long)dout, (long long)lse,
                     (long long)dq, (long long)dk, (long long)dv, bs, rs, hs,
                     (long long)(scale * 1000), (long long)ws, (long long)wsb, sms,
                     (long long)stream, 0};
  for (int i = 0; i < 24; ++i) last[i] = a[i];
  return scale < 0 ? 7 : 0;
}
"""

CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


def _mod():
    return bench_scripts.load("fa3_peer")


def _build(tmp_path, source, name):
    if CC is None:
        pytest.skip("no C compiler")
    src, lib = tmp_path / (name + ".c"), tmp_path / ("lib%s.so" % name)
    src.write_text(source)
    subprocess.run([CC, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    return str(lib)


def test_missing_and_foreign_libraries_are_refused(tmp_path):
    mod = _mod()
    with pytest.raises(FileNotFoundError, match="not found"):
        mod.Fa3Peer(str(tmp_path / "nope.so"))
    other = _build(tmp_path, "int something_else(void) { return 0; }\n", "other")
    with pytest.raises(ValueError, match="not an FA3 peer library"):
        mod.Fa3Peer(other)
    text = tmp_path / "text.so"
    text.write_text("not an ELF file")
    with pytest.raises(ValueError, match="does not load"):
        mod.Fa3Peer(str(text))


def test_call_is_marshalled_in_the_entry_points_order(tmp_path):
    mod = _mod()
    lib = _build(tmp_path, STAND_IN, "standin")
    peer = mod.Fa3Peer(lib)
    assert peer.covers(64) and peer.covers(128) and not peer.covers(96)
    assert peer.workspace_bytes(128, True, 4, 16, 4096) == 128000 + 100 + 4 + 16 + 4096
    with pytest.raises(ValueError, match="no kernel for d=96"):
        peer.workspace_bytes(96, False, 1, 1, 128)
    ptrs = [0x1000 * (i + 1) for i in range(9)]
    peer.launch(128, True, False, (4, 16, 4096), ptrs, (1 << 23, 128, 4096 * 128), 0.125,
                0xABC000, 999, 132, 0x77)
    last = (ctypes.c_longlong * 24).in_dll(ctypes.CDLL(lib), "last")
    assert list(last[:6]) == [128, 1, 0, 4, 16, 4096]
    assert list(last[6:15]) == ptrs
    assert list(last[15:18]) == [1 << 23, 128, 4096 * 128]
    assert list(last[18:23]) == [125, 0xABC000, 999, 132, 0x77]
    with pytest.raises(RuntimeError, match="code 7"):
        peer.launch(64, False, True, (1, 1, 128), ptrs, (1, 1, 1), -1.0, 0, 0, 132, 0)
    with pytest.raises(ValueError, match="9 pointers"):
        peer.launch(64, False, True, (1, 1, 128), ptrs[:8], (1, 1, 1), 1.0, 0, 0, 132, 0)


class _T:  # what strides_of reads of a tensor
    def __init__(self, *stride):
        self._s = stride

    def stride(self):
        return self._s


def test_strides_are_batch_row_head_and_shared():
    mod = _mod()
    b, h, s, d = 2, 16, 1024, 128
    bhsd = _T(h * s * d, s * d, d, 1)  # [B, H, S, D] contiguous
    bshd = _T(s * h * d, d, h * d, 1)  # a transposed view of [B, S, H, D]
    assert mod.strides_of([bhsd] * 8) == (h * s * d, d, s * d)
    assert mod.strides_of([bshd] * 8) == (s * h * d, h * d, d)
    with pytest.raises(ValueError, match="one memory order"):
        mod.strides_of([bhsd] * 7 + [bshd])
    with pytest.raises(ValueError, match="contiguous head dimension"):
        mod.strides_of([_T(h * s * d, s * d, 1, s)] * 8)


def _built_peer():
    return _mod().built_lib()


@pytest.mark.skipif(_built_peer() is None, reason="no FA3 peer library built here")
def test_built_peer_covers_the_benchmark_shapes():
    peer = _mod().Fa3Peer(_built_peer())
    b, h, s = 4, 16, 4096
    # FA3's own workspace (its mha_bwd): dPsum and lse_log2 over the rows
    # rounded to its row block (64 at d = 128 causal, 80 full, 128 at
    # d = 64), the f32 dQ accumulator, the semaphores; each part here is
    # padded to 256 bytes.
    for d, causal, bm in ((128, True, 64), (128, False, 80), (64, True, 128), (64, False, 128)):
        sr = -(-s // bm) * bm
        parts = [b * h * sr * 4, b * h * sr * 4, b * h * sr * d * 4, -(-s // bm) * b * h * 4]
        assert peer.workspace_bytes(d, causal, b, h, s) == sum(-(-p // 256) * 256 for p in parts)
    with pytest.raises(ValueError):
        peer.workspace_bytes(96, True, b, h, s)


def test_build_script_refuses_bad_arguments(tmp_path):
    script = os.path.join(bench_scripts.ROOT, "bench", "peers", "fa3", "build.sh")
    p = subprocess.run([script], capture_output=True, text=True)
    assert p.returncode == 2 and "usage" in p.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    p = subprocess.run([script, str(empty), str(empty), str(tmp_path / "out")],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "has no flash_bwd_launch_template.h" in p.stderr
    assert not (tmp_path / "out").exists()  # nothing half-written


def test_check_refuses_a_missing_library_before_touching_the_gpu(tmp_path):
    p = subprocess.run([sys.executable, bench_scripts.path("fa3_peer"), "--check",
                        str(tmp_path / "nope.so")], capture_output=True, text=True)
    assert p.returncode == 2 and "not found" in p.stderr
