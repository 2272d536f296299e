#!/usr/bin/env bash
# One prepared run on a lent GPU machine (no network there): install the carried wheels, then
# the GPU scoreboard, then the test suite on CUDA. Run from the repository root with:
#   .whl/k2/  keras 2.3.1, keras-applications, keras-preprocessing, pydot (Python 3.12 wheels)
#   .whl/k3/  Keras 3, namex, optree (for keras3_torch)
#   .bench/   a copy of ../shared/bench
# Environment (all optional): OUT (results folder), BENCH_S (scoreboard budget, s), TESTS_S
# (suite time limit, s), IMPLS, WORKLOADS, BATCHES (scoreboard.py's lists), TESTS (pytest
# arguments, default the whole suite), SKIP_BENCH=1, SKIP_TESTS=1.
set -u
OUT=${OUT:-/tmp/gpu-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
# torchk from this checkout, also in the subprocesses tests start (`python -m torchk run`).
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
# Compiled at install (Keras 2.3.1's `is not 0` warns when compiled: an error under -W error).
python3 -m pip install -q --no-index --no-deps .whl/k2/*.whl 2>&1 | grep -v WARNING
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site3 .whl/k3/*.whl \
    2>&1 | grep -v WARNING
{
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
    python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda,
'cudnn', torch.backends.cudnn.version(), torch.cuda.get_device_name())"
    TORCHK_TF32=0 python3 -c "import torch, torchk.config as c; c.device(); print('TF32 off:',
torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
torch.backends.cudnn.rnn.fp32_precision, torch.backends.cudnn.conv.fp32_precision)"
    nproc
} > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"

if [ "${SKIP_BENCH:-0}" != 1 ]; then
    # shellcheck disable=SC2086
    timeout -s INT -k 10 "$(( ${BENCH_S:-150} + 40 ))" python3 benchmarks/gpu/scoreboard.py \
        --bench-dir .bench --keras3-path /tmp/site3 --budget-s "${BENCH_S:-150}" \
        ${IMPLS:+--impls $IMPLS} ${WORKLOADS:+--workloads $WORKLOADS} \
        ${BATCHES:+--batches $BATCHES} --out "$OUT/gpu.jsonl" --md "$OUT/gpu.md"
fi

if [ "${SKIP_TESTS:-0}" != 1 ]; then
    # SIGINT at the limit: pytest stops its workers and still writes the summary and junit.
    # shellcheck disable=SC2086
    # Two threads per worker: 15 workers of 16 threads each would oversubscribe the cores.
    TORCHK_DEVICE=cuda OMP_NUM_THREADS=2 timeout -s INT -k 20 "${TESTS_S:-150}" \
        python3 -m pytest -v -n 15 \
        --timeout 120 -p no:cacheprovider -rfE --tb=short --junitxml="$OUT/junit.xml" \
        ${TESTS:-} > "$OUT/tests.log" 2>&1
    echo "pytest exit: $?"
    grep -E "^(FAILED|ERROR) |passed|failed" "$OUT/tests.log" | tail -60
fi
