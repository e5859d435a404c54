#!/usr/bin/env bash
# The prepared device run: every GPU figure and the suite with the GPU as default
# device, in one command that fits one device call, each step time-boxed so a slow
# step cannot starve the rest. Logs go to $OUT (a temporary folder when unset).
#
#   benchmarks/gpu_run.sh [--cpu] [--suite-alongside] [STEP ...]
#
# STEPs, in this order by default: versions profile bench gpt train suite
#   versions  device, jax, jaxlib, numpy, PyTorch
#   profile   benchmarks/profile_step.py: the jitted, eager and jax.jit small-MLP steps
#             and the GPT's jitted step (--preset gpu): compilations of the first three
#             calls, waits and reads per step, step time, top 30 of cProfile each
#             (profile_*.txt, profile_summary.json in $OUT), time-boxed by $PROFILE_LIMIT
#   bench     benchmarks/bench_gpu.py, one figure per process (ratios against the aims),
#             time-boxed each by $BENCH_BOXES
#   gpt       benchmarks/bench_gpt.py --preset gpu, then the fused linear cross-entropy
#             (benchmarks/bench_linear_cross_entropy.py --gpu: N=8192, V=50304, d=768, bf16)
#   train     examples/train_gpt.py --preset gpu for $TRAIN_STEPS steps (default 400)
#   precision benchmarks/bench_precision_step.py: the jitted MLP step against jax.jit at
#             equal float32 matmul precision, time-boxed by $PRECISION_LIMIT (240)
#   stepcost  benchmarks/bench_step_cost.py --only percall,eager,async --repeats 2 (cached
#             call cost at 4/40/400 tensors, eager op costs, the async check), time-boxed
#             by $STEPCOST_LIMIT (240)
#   suite     the default test run with the GPU as default device, -n 14, -v --tb=short
#             to suite.log, junit XML to suite.xml (a test running over 240 s fails);
#             $SUITE_TESTS: a file of test ids, one a line, to run only those
# Time boxes in seconds: $PROFILE_LIMIT (150), $BENCH_BOXES (figure:seconds pairs, 325 in all), $GPT_LIMIT
# (100), $LCE_LIMIT (60), $TRAIN_LIMIT (60), $SUITE_LIMIT (360).
# Sizing: on an H200 the whole suite takes about 6 minutes with -n 14, and the figures
# about as long (every kernel compiles for the GPU), so a full measurement is two
# device calls of at most 9 minutes: `gpu_run.sh versions bench gpt train` and
# `gpu_run.sh versions suite`.
# --cpu: the same steps at tiny sizes with JAX_PLATFORMS=cpu, to test this script
#        (under two minutes on two cores; the suite step runs one test file).
# --suite-alongside: start the suite first, in the background, and run the other
#        steps beside it (a first look when device time is short: the figures then
#        share the machine with 14 test workers and are not quiet-machine figures).
# Wheels the device lacks travel in .whl/ (see ../shared/GPU.md) and are installed
# into /tmp/site when present (not with --cpu, which uses .venv when there is one).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$(mktemp -d)}
CPU=0
ALONGSIDE=0
STEPS=()
for arg in "$@"; do
    case $arg in
        --cpu) CPU=1 ;;
        --suite-alongside) ALONGSIDE=1 ;;
        versions|profile|bench|gpt|train|precision|stepcost|suite) STEPS+=("$arg") ;;
        *) echo "gpu_run.sh: unknown argument '$arg'" >&2; exit 2 ;;
    esac
done
[ ${#STEPS[@]} -eq 0 ] && STEPS=(versions profile bench gpt train suite)

if [ $CPU = 0 ] && compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl || exit 1
    export PATH=/tmp/site/bin:$PATH
fi
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] && [ -z "${PYTHON:-}" ] && PY=.venv/bin/python
export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
export XLA_PYTHON_CLIENT_PREALLOCATE=false TQDM_MININTERVAL=15
if [ $CPU = 1 ]; then
    export JAX_PLATFORMS=cpu
    DEVICE=cpu
else
    DEVICE=gpu
fi
LOG=$OUT/run.log
: >"$LOG"

say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$LOG"; }

# box SECONDS NAME COMMAND...: run a step with a time limit, its output into run.log.
box() {
    local limit=$1 name=$2
    shift 2
    say "$name (at most ${limit} s): $*"
    local start=$SECONDS
    timeout -k 10 "$limit" "$@" >>"$LOG" 2>&1
    local status=$?
    say "$name ended with status $status after $((SECONDS - start)) s"
}

versions() {
    say "versions"
    { nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 || true
      echo "arraykit sources: sha256 $(git ls-files -z arraykit 2>/dev/null | sort -z \
          | xargs -0 cat 2>/dev/null | sha256sum | cut -c1-16) (of the tracked files' contents)"
      "$PY" -c 'import sys, jax, jaxlib, numpy, torch, arraykit as ak
print("python", sys.version.split()[0], "jax", jax.__version__, "jaxlib", jaxlib.__version__,
      "numpy", numpy.__version__, "torch", torch.__version__)
print("jax devices", jax.devices(), "arraykit default device",
      ak.__array_namespace_info__().default_device())'
    } 2>&1 | tee -a "$LOG"
}

profile() {
    if [ $CPU = 1 ]; then
        box 120 profile "$PY" benchmarks/profile_step.py --device cpu --steps 20 --out "$OUT"
    else
        box "${PROFILE_LIMIT:-150}" profile "$PY" benchmarks/profile_step.py --device gpu --steps 200 \
            --out "$OUT"
    fi
}

# bench_gpu.py one figure per process, each with its own time box (seconds).
BENCH_BOXES=${BENCH_BOXES:-"mlp:60 large:45 ce:90 first:45 dropped:20 enqueue:20 cache:45"}

bench() {
    local figure limit
    for entry in $BENCH_BOXES; do
        figure=${entry%%:*}
        limit=${entry##*:}
        if [ $CPU = 1 ]; then
            box 60 "bench_gpu $figure" "$PY" benchmarks/bench_gpu.py --device cpu --repeats 1 \
                --steps 4 --no-torch-compile --only "$figure"
        else
            box "$limit" "bench_gpu $figure" "$PY" benchmarks/bench_gpu.py --device gpu --repeats 5 \
                --steps 20 --only "$figure"
        fi
    done
}

gpt() {
    if [ $CPU = 1 ]; then
        box 90 bench_gpt "$PY" benchmarks/bench_gpt.py --preset tiny --device cpu --steps 2 \
            --rounds 1 --skip torch.compile
        box 60 linear_cross_entropy "$PY" benchmarks/bench_linear_cross_entropy.py \
            --n 256 --d 64 --vocab 1024 --repeats 2
    else
        box "${GPT_LIMIT:-100}" bench_gpt "$PY" benchmarks/bench_gpt.py --preset gpu --device gpu \
            --steps 10 --rounds 3
        box "${LCE_LIMIT:-60}" linear_cross_entropy "$PY" benchmarks/bench_linear_cross_entropy.py --gpu
    fi
}

train() {
    if [ $CPU = 1 ]; then
        box 90 train_gpt "$PY" examples/train_gpt.py --preset tiny --device cpu --steps 20
    else
        box "${TRAIN_LIMIT:-60}" train_gpt "$PY" examples/train_gpt.py --preset gpu --device gpu \
            --steps "${TRAIN_STEPS:-400}"
    fi
}

precision() {
    if [ $CPU = 1 ]; then
        box 120 precision "$PY" benchmarks/bench_precision_step.py --device cpu --steps 10
    else
        box "${PRECISION_LIMIT:-240}" precision "$PY" benchmarks/bench_precision_step.py --device gpu
    fi
}

stepcost() {
    box "${STEPCOST_LIMIT:-240}" stepcost "$PY" benchmarks/bench_step_cost.py \
        --only percall,eager,async --repeats $([ $CPU = 1 ] && echo 1 || echo 2)
}

suite() {
    local limit=${SUITE_LIMIT:-360}
    if [ $CPU = 1 ]; then
        box 60 suite "$PY" -m pytest -p no:cacheprovider -n 2 -v --tb=short \
            tests/test_layout.py --junitxml="$OUT/suite.xml"
        return
    fi
    local chosen=()
    [ -n "${SUITE_TESTS:-}" ] && mapfile -t chosen <"$SUITE_TESTS"
    say "suite (at most ${limit} s, ${SUITE_TESTS:-every test}, log in suite.log)"
    XLA_PYTHON_CLIENT_MEM_FRACTION=0.05 timeout -k 20 "$limit" "$PY" -m pytest -p no:cacheprovider \
        -n 14 -v --tb=short -rfE --timeout 240 --junitxml="$OUT/suite.xml" "${chosen[@]}" \
        >"$OUT/suite.log" 2>&1
    local status=$?
    say "suite ended with status $status: $(grep -E '^(=+ )?[0-9]+ (passed|failed)' "$OUT/suite.log" | tail -1)"
    grep -E ' (FAILED|ERROR) ' "$OUT/suite.log" | sed 's/^\[gw[0-9]*\] \[ *[0-9]*%\] //' \
        | sort | uniq | head -200 >>"$LOG"
}

say "gpu_run.sh on $DEVICE, steps: ${STEPS[*]}, logs in $OUT"
SUITE_PID=
if [ $ALONGSIDE = 1 ] && [[ " ${STEPS[*]} " == *" suite "* ]]; then
    suite & SUITE_PID=$!
fi
for step in "${STEPS[@]}"; do
    if [ "$step" = suite ] && [ -n "$SUITE_PID" ]; then
        continue
    fi
    $step
done
[ -n "$SUITE_PID" ] && wait "$SUITE_PID"
say "done"
