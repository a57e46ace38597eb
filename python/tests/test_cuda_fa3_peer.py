"""FlashAttention-3's backward peer (bench/peers/fa3/) on the GPU: every
kernel against float64 gradients and the deterministic ones bit for bit
(`pytest -m cuda`; skips without the peer library, which CI never builds:
$DASH_FA3_LIB or build/fa3-peer/libdash_fa3_peer.so)."""

import pytest

import bench_scripts

pytest.importorskip("torch", reason="PyTorch is not installed")
pytestmark = pytest.mark.cuda


def _lib():
    return bench_scripts.load("fa3_peer").built_lib()


@pytest.mark.skipif(_lib() is None, reason="no FA3 peer library built")
def test_every_fa3_kernel_matches_float64_and_repeats():
    mod = bench_scripts.load("fa3_peer")
    rows = mod.check(mod.Fa3Peer(_lib()))
    assert len(rows) == 8  # d 64 / 128 x full / causal x det / nondet
    for d, causal, det, err, same in rows:
        assert err < 1e-2, (d, causal, det, err)
        if det:
            assert same, (d, causal)
