"""FlashAttention-3's backward as a peer of the benchmark (--fa3-lib).

bench/peers/fa3/build.sh compiles FA3's hopper/ sources behind a C entry
point (libdash_fa3_peer.so, no torch inside); this module loads it with
ctypes and calls it on torch tensors, so bench/attention_bwd.py times FA3,
deterministic and not, in the same rounds as DASH and cuDNN. The loading and
the argument marshalling are torch-free (tests drive them with a stand-in
library); torch is imported only by `backward` and `check`.

  python3 bench/fa3_peer.py --check LIB    (GPU: every kernel against float64)

The benchmark runs that check in a child process before it adds the peer to
a sweep: FA3's launch checks exit the process on a CUDA error, and a peer
that cannot run must cost its rows, not the sweep.
"""
import argparse
import ctypes
import os
import sys

HEAD_DIMS = (64, 128)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def built_lib():
    """$DASH_FA3_LIB, else build/fa3-peer/libdash_fa3_peer.so, where the file
    exists; None otherwise."""
    for p in (os.environ.get("DASH_FA3_LIB"),
              os.path.join(ROOT, "build", "fa3-peer", "libdash_fa3_peer.so")):
        if p and os.path.isfile(p):
            return p
    return None


class Fa3Peer:
    """The peer library at `path`; refuses a missing file or one without the
    two entry points, with a message that says what it is."""

    def __init__(self, path):
        if not os.path.isfile(path):
            raise FileNotFoundError(
                "FA3 peer library %r not found (bench/peers/fa3/README.md builds it)" % path)
        try:
            lib = ctypes.CDLL(os.path.abspath(path))
        except OSError as e:
            raise ValueError("FA3 peer library %r does not load: %s" % (path, e)) from None
        for name in ("dash_fa3_bwd", "dash_fa3_bwd_workspace_bytes"):
            if not hasattr(lib, name):
                raise ValueError("%r is not an FA3 peer library (no %s)" % (path, name))
        ws = lib.dash_fa3_bwd_workspace_bytes
        ws.argtypes = [ctypes.c_int] * 5
        ws.restype = ctypes.c_size_t
        run = lib.dash_fa3_bwd
        run.argtypes = ([ctypes.c_int] * 6 + [ctypes.c_void_p] * 9 +
                        [ctypes.c_int64] * 3 + [ctypes.c_float, ctypes.c_void_p,
                                                ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p])
        run.restype = ctypes.c_int
        self.path, self._ws, self._run = path, ws, run

    @staticmethod
    def covers(d):
        return d in HEAD_DIMS

    def workspace_bytes(self, d, causal, b, h, s):
        n = self._ws(d, int(causal), b, h, s)
        if n == 0:
            raise ValueError("the FA3 peer has no kernel for d=%d b=%d h=%d s=%d" % (d, b, h, s))
        return n

    def launch(self, d, causal, deterministic, shape, ptrs, strides, scale,
               workspace, workspace_bytes, num_sms, stream):
        """One backward: shape (b, h, s); ptrs the device addresses of q, k,
        v, o, dO, lse, dq, dk, dv in that order; strides (batch, row, head)
        in elements, shared by the eight bf16 tensors."""
        b, h, s = shape
        if len(ptrs) != 9 or len(strides) != 3:
            raise ValueError("launch wants 9 pointers and 3 strides")
        rc = self._run(d, int(causal), int(deterministic), b, h, s, *ptrs, *strides,
                       scale, workspace, workspace_bytes, num_sms, stream)
        if rc != 0:
            raise RuntimeError("FA3 peer backward failed (code %d) at d=%d b=%d h=%d s=%d"
                               % (rc, d, b, h, s))


def strides_of(tensors):
    """The (batch, row, head) element strides of logical [B, H, S, D]
    tensors, which must share them and have a contiguous last dimension
    (FA3 takes one set of strides per call here)."""
    st = tuple(tensors[0].stride())
    for t in tensors:
        if tuple(t.stride()) != st:
            raise ValueError("the FA3 peer wants q, k, v, o, dO and the gradients in one memory "
                             "order, got strides %s and %s" % (st, tuple(t.stride())))
    if st[3] != 1:
        raise ValueError("the FA3 peer wants a contiguous head dimension, got strides %s" % (st,))
    return st[0], st[2], st[1]


def backward(peer, q, k, v, o, do, lse, causal, scale, deterministic):
    """dq, dk, dv of logical [B, H, S, D] bf16 tensors (bhsd or a transposed
    view of bshd memory) with lse [B, H, S] f32 (natural log, SDPA's flash
    forward's); the workspace is allocated per call from torch's allocator,
    as FA3's own interface does."""
    import torch
    b, h, s, d = q.shape
    if not peer.covers(d):
        raise ValueError("the FA3 peer has no kernel for d=%d" % d)
    if tuple(lse.shape) != (b, h, s) or lse.dtype != torch.float32:
        raise ValueError("lse must be f32 [%d, %d, %d], got %s %s" % (b, h, s, lse.dtype,
                                                                      tuple(lse.shape)))
    lse = lse.contiguous()
    dq, dk, dv = (torch.empty_like(t) for t in (q, k, v))
    strides = strides_of([q, k, v, o, do, dq, dk, dv])
    nbytes = peer.workspace_bytes(d, causal, b, h, s)
    ws = torch.empty(nbytes, dtype=torch.uint8, device=q.device)
    props = torch.cuda.get_device_properties(q.device)
    peer.launch(d, causal, deterministic, (b, h, s),
                [t.data_ptr() for t in (q, k, v, o, do, lse, dq, dk, dv)], strides,
                scale, ws.data_ptr(), nbytes, props.multi_processor_count,
                torch.cuda.current_stream(q.device).cuda_stream)
    return dq, dk, dv


def cell_call(peer, cell, deterministic):
    """FA3's backward of a benchmark cell (bench/profile_cell.py's
    cell_inputs dict) as a callable."""
    args = [cell[k] for k in ("q", "k", "v", "o", "do", "lse")]
    return lambda: backward(peer, *args, cell["causal"], cell["scale"], bool(deterministic))


def check(peer, b=2, h=3, s=384, seed=0):
    """[(d, causal, deterministic, worst relative error, bitwise repeatable)]
    of every kernel of the peer on a small shape (s not a multiple of any of
    FA3's row blocks), against float64 attention gradients."""
    import torch
    out = []
    for d in HEAD_DIMS:
        g = torch.Generator(device="cuda").manual_seed(seed)
        q, k, v, do = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, generator=g)
                       for _ in range(4))
        for causal in (False, True):
            q64, k64, v64 = (t.double().requires_grad_() for t in (q, k, v))
            scale = d ** -0.5
            sc = torch.einsum("bhqd,bhkd->bhqk", q64, k64) * scale
            if causal:
                sc = sc.masked_fill(torch.ones(s, s, dtype=torch.bool, device="cuda").triu(1),
                                    float("-inf"))
            lse = torch.logsumexp(sc, dim=-1)
            o = torch.einsum("bhqk,bhkd->bhqd", torch.softmax(sc, dim=-1), v64)
            ref = torch.autograd.grad(o, (q64, k64, v64), do.double())
            o16, lse32 = o.detach().to(torch.bfloat16), lse.detach().float()
            for det in (True, False):
                got = backward(peer, q, k, v, o16, do, lse32, causal, scale, det)
                again = backward(peer, q, k, v, o16, do, lse32, causal, scale, det)
                err = max(((a.double() - r).norm() / r.norm()).item() for a, r in zip(got, ref))
                same = all(torch.equal(x, y) for x, y in zip(got, again))
                out.append((d, causal, det, err, same))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description="FA3's backward peer: check it on the GPU")
    ap.add_argument("--check", metavar="LIB", required=True)
    args = ap.parse_args(argv)
    try:
        peer = Fa3Peer(args.check)
    except (OSError, ValueError) as e:
        print("fa3_peer: %s" % e, file=sys.stderr)
        return 2
    bad = 0
    for d, causal, det, err, same in check(peer):
        # bf16 inputs against float64: < 1e-2 as the project's own kernels;
        # the deterministic kernels must repeat bit for bit.
        ok = err < 1e-2 and (same or not det)
        bad += not ok
        print("d=%d %-6s %-6s rel err %.2e %s %s" % (
            d, "causal" if causal else "full", "det" if det else "nondet", err,
            "bitwise" if same else "differs", "ok" if ok else "FAIL"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
