#!/usr/bin/env bash
# Builds the GPU test binary against the CPU emulation of CUDA and cuBLAS
# (tests/gpu/emu: same kernels/ *.cu sources, compiled by g++ with
# -DSX_CUDA_EMU) and runs it: the kernels and the GPU engine, unchanged,
# tested on a machine without a GPU.  Slow (every CUDA thread is a fiber),
# so it runs the kernel and engine groups, not the sampler's 10^6 draws or
# the benchmarks, which mean nothing here.
#
#   tests/gpu/emu/run.sh [GROUP...]     (default: mask kernels engine)
# Env: BUILD (default build-emu), SX_EMU_ORDER=fwd|rev|rand (fiber order
# between barriers; run.sh runs kernels twice, forward and reversed, so a
# missing barrier shows), JOBS (default 2).
set -euo pipefail
cd "$(dirname "$0")/../../.."
B=${BUILD:-build-emu}
J=${JOBS:-2}
mkdir -p "$B/emu"
make --no-print-directory -j"$J" BUILD="$B" CUDA=0 "$B/libstrux.a" >/dev/null

CXXFLAGS="-std=c++17 -O2 -g -DSX_CUDA_EMU -Itests/gpu/emu/include -I. -Wall -Wextra -Werror \
  -Wno-unused-parameter -Wno-unknown-pragmas -Wno-sign-compare -fno-strict-aliasing"
CFLAGS="-std=c11 -D_GNU_SOURCE -O2 -g -Itests/gpu/emu/include -I. -Wall -Wextra -Werror \
  -Wno-unused-parameter -fno-strict-aliasing"
objs=()
build() { # src obj compiler flags...
    local src=$1 obj=$2; shift 2
    if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] || [ -n "$(find kernels engine tests/gpu -newer "$obj" \
        \( -name '*.h' -o -name '*.cuh' \) -print -quit)" ]; then
        "$@" -c "$src" -o "$obj"
    fi
    objs+=("$obj")
}
for f in kernels/*.cu engine/cuda/*.cu; do
    build "$f" "$B/emu/$(basename "$f" .cu).o" g++ $CXXFLAGS -x c++
done
build tests/gpu/emu/cuda_emu.cpp "$B/emu/cuda_emu.o" g++ $CXXFLAGS
for f in tests/gpu/*.c; do
    build "$f" "$B/emu/$(basename "$f" .c).o" gcc $CFLAGS
done
g++ -o "$B/strux_gpu_tests_emu" "${objs[@]}" "$B/libstrux.a" \
    -lnng -ljansson -lpcre2-8 -lutf8proc -lm -lpthread

groups=("$@")
[ ${#groups[@]} -eq 0 ] && groups=(mask kernels engine)
echo "== emulated GPU: ${groups[*]} (fiber order ${SX_EMU_ORDER:-fwd})"
"$B/strux_gpu_tests_emu" --dir "${TMPDIR:-/tmp}/strux-emu-models" "${groups[@]}"
if [ -z "${SX_EMU_ORDER:-}" ] && [[ " ${groups[*]} " == *" kernels "* ]]; then
    echo "== emulated GPU: kernels again, fibers in reverse order"
    SX_EMU_ORDER=rev "$B/strux_gpu_tests_emu" kernels
fi
# no device: a clear error, not a crash, from the test driver and the engine
out=$(SX_EMU_NO_DEVICE=1 "$B/strux_gpu_tests_emu" --require-gpu kernels 2>&1) && {
    echo "FAIL: --require-gpu passed without a device"; exit 1; }
echo "no-device check: $out" | head -1
SX_EMU_NO_DEVICE=1 "$B/strux_gpu_tests_emu" nodevice
