#!/usr/bin/env bash
# Builds FlashAttention-3's backward as a benchmark peer library:
#   bench/peers/fa3/build.sh FA3_HOPPER_DIR CUTLASS_INCLUDE_DIR OUT_DIR
# FA3_HOPPER_DIR: FlashAttention's hopper/ sources (README.md here says which
# versions); CUTLASS_INCLUDE_DIR: CUTLASS 4 headers. Writes
# OUT_DIR/libdash_fa3_peer.so and OUT_DIR/build.log (ptxas -v included). Needs
# CUDA 12.8+ nvcc; no GPU. The two head dims compile in parallel (~2-4 min and
# a few GB of memory each).
set -euo pipefail
if [ $# -ne 3 ]; then
  echo "usage: $0 FA3_HOPPER_DIR CUTLASS_INCLUDE_DIR OUT_DIR" >&2
  exit 2
fi
hopper=$(cd "$1" && pwd)
cutlass=$(cd "$2" && pwd)
out=$3
for f in flash_bwd_launch_template.h flash.h mainloop_bwd_sm90_tma_gmma_ws.hpp; do
  [ -f "$hopper/$f" ] || { echo "build.sh: $hopper has no $f" >&2; exit 2; }
done
[ -f "$cutlass/cutlass/cutlass.h" ] || { echo "build.sh: $cutlass has no cutlass/cutlass.h" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# FA3's own setup.py flags for sm90a (and torch's CUDAExtension defines);
# the FLASHATTENTION_DISABLE_* set only prunes what the peer never calls.
flags=(-O3 -std=c++17 --use_fast_math --expt-relaxed-constexpr -Xcompiler -fPIC
  -DCUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED -DCUTLASS_ENABLE_GDC_FOR_SM90
  -DCUTLASS_DEBUG_TRACE_LEVEL=0 -DNDEBUG
  -D__CUDA_NO_HALF_OPERATORS__ -D__CUDA_NO_HALF_CONVERSIONS__
  -D__CUDA_NO_BFLOAT16_CONVERSIONS__ -D__CUDA_NO_HALF2_OPERATORS__
  -DFLASHATTENTION_DISABLE_SOFTCAP -DFLASHATTENTION_DISABLE_LOCAL
  -DFLASHATTENTION_DISABLE_VARLEN -DFLASHATTENTION_DISABLE_PAGEDKV
  -DFLASHATTENTION_DISABLE_SPLIT -DFLASHATTENTION_DISABLE_APPENDKV
  -DFLASHATTENTION_DISABLE_PACKGQA -DFLASHATTENTION_DISABLE_CLUSTER
  -DFLASHATTENTION_DISABLE_SM8x
  -gencode arch=compute_90a,code=sm_90a
  -I "$hopper" -I "$cutlass")
# FA3's launch template names the sm80 backward types inside
# std::conditional_t; sm90 never instantiates them, so declarations suffice
# where a checkout lacks those headers.
mkdir -p "$tmp/stubs"
if [ ! -f "$hopper/mainloop_bwd_sm80.hpp" ]; then
  cat > "$tmp/stubs/mainloop_bwd_sm80.hpp" <<'STUB'
#pragma once
namespace flash {
template <int, int, class, class, class, class, bool, bool, bool, bool, bool,
          bool, bool, bool, int, int, int, int, bool>
struct CollectiveMainloopBwdSm80;
}
STUB
fi
if [ ! -f "$hopper/flash_bwd_kernel_sm80.h" ]; then
  cat > "$tmp/stubs/flash_bwd_kernel_sm80.h" <<'STUB'
#pragma once
namespace flash {
template <class, class, class> class FlashAttnBwdSm80;
}
STUB
fi
flags+=(-I "$tmp/stubs")
{
  pids=()
  for d in 64 128; do
    "$nvcc" "${flags[@]}" -Xptxas -v -DFA3_PEER_HDIM=$d -c "$here/fa3_bwd_peer.cu" \
      -o "$tmp/d$d.o" > "$tmp/d$d.log" 2>&1 &
    pids+=($!)
  done
  "$nvcc" "${flags[@]}" -DFA3_PEER_HDIM=0 -c "$here/fa3_bwd_peer.cu" -o "$tmp/api.o"
  rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  cat "$tmp/d64.log" "$tmp/d128.log"
  [ $rc -eq 0 ] || { echo "build.sh: a head dim failed to compile" >&2; exit 1; }
  "$nvcc" -shared -gencode arch=compute_90a,code=sm_90a "$tmp/api.o" "$tmp/d64.o" "$tmp/d128.o" \
    -o "$tmp/libdash_fa3_peer.so"
} > "$out/build.log" 2>&1 || { tail -40 "$out/build.log" >&2; exit 1; }
mv "$tmp/libdash_fa3_peer.so" "$out/libdash_fa3_peer.so"
echo "build.sh: $out/libdash_fa3_peer.so"
