"""The GPU scoreboard: the shared scoreboard's workloads on a CUDA device.

The same models, data and timing protocol as the CPU scoreboard (`../shared/bench/`, passed as
`--bench-dir`: its `bench_common` workloads and data, `impl_raw_torch.build`,
`keras2_models.build`, `impl_keras3_torch.build`), run on `--device` (default `cuda`) at the
CPU scoreboard's batch sizes and at batch sizes a GPU user picks (`GPU_BATCH`), by:

| impl | what |
|---|---|
| `raw_torch` | the shared hand-written torch step, eager, modules on the device |
| `raw_torch@fp16` | the same under `torch.autocast(float16)` with a `GradScaler` |
| `keras2_torchk` | Keras 2.3.1 on torchk, `train_on_batch` / `predict_on_batch` |
| `keras2_torchk@fp16` | the same under the `mixed_float16` policy (loss scaling) |
| `keras2_torchk+compile` | the same float32 model with `TORCHK_COMPILE=1` |
| `keras2_torchk+cudagraphs` | ... and `TORCHK_COMPILE_MODE=reduce-overhead` (CUDA graphs) |
| `keras3_torch` | Keras 3 with `KERAS_BACKEND=torch` |

Every impl gets numpy batches and copies them to the device inside the timed step, as a
training loop does (raw torch: page-locked tensors, `non_blocking` copies). Every torch impl
runs with TF32 matmuls and convolutions (`--tf32 1`, TF's and torchk's default on CUDA) or
without (`--tf32 0`). Each impl runs in its own process, its workloads one after another;
each record is one JSON line (the CPU scoreboard's fields, plus `peak_gpu_mb`, the peak of
torch's CUDA allocator during the build and the steps, and `warmup_s`, the warm-up steps'
wall time, which holds a first compile). The table prints ratios to `raw_torch` (float32,
eager) from the same run, and for `@fp16` also to `raw_torch@fp16`.

Usage (on the GPU machine; Keras 2.3.1 and Keras 3 cannot share a `sys.path`, so each gets
its own folder):

    python benchmarks/gpu/scoreboard.py --bench-dir ../shared/bench \\
        --keras2-path /tmp/site --keras3-path /tmp/site3 --out gpu.jsonl --md gpu.md

`--device cpu` runs the same harness on the CPU (a check of the harness, not a scoreboard).
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

IMPLS = {
    'raw_torch': dict(kind='raw', precision='float32'),
    'keras2_torchk': dict(kind='keras2', precision='float32'),
    'raw_torch@fp16': dict(kind='raw', precision='mixed_float16'),
    'keras2_torchk@fp16': dict(kind='keras2', precision='mixed_float16'),
    'keras3_torch': dict(kind='keras3', precision='float32'),
    'keras2_torchk+compile': dict(kind='keras2', precision='float32',
                                  env={'TORCHK_COMPILE': '1'},
                                  workloads=('mlp', 'cnn', 'mobilenet', 'predict_mobilenet')),
    'keras2_torchk+cudagraphs': dict(kind='keras2', precision='float32',
                                     env={'TORCHK_COMPILE': '1',
                                          'TORCHK_COMPILE_MODE': 'reduce-overhead'},
                                     workloads=('mlp', 'cnn', 'mobilenet')),
}
WORKLOADS = ('mlp', 'cnn', 'lstm', 'gru', 'lstm_dropout', 'ctc', 'mobilenet',
             'predict_mobilenet')
# Batch sizes a GPU user trains these models with (the CPU scoreboard's are bench_common's).
GPU_BATCH = {'mlp': 1024, 'cnn': 512, 'lstm': 256, 'gru': 256, 'lstm_dropout': 256,
             'ctc': 128, 'mobilenet': 128, 'predict_mobilenet': 256}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--bench-dir', required=True, help='the shared scoreboard folder')
    p.add_argument('--device', default='cuda')
    p.add_argument('--impls', nargs='+', default=list(IMPLS), choices=list(IMPLS))
    p.add_argument('--workloads', nargs='+', default=list(WORKLOADS), choices=WORKLOADS)
    p.add_argument('--batches', nargs='+', default=['gpu', 'cpu'], choices=['gpu', 'cpu'])
    p.add_argument('--tf32', choices=['0', '1'], default='1')
    p.add_argument('--keras2-path', default='', help='sys.path entry holding keras 2.3.1')
    p.add_argument('--keras3-path', default='', help='sys.path entry holding Keras 3')
    p.add_argument('--budget-s', type=float, default=900.0,
                   help='runs that would start after this many seconds are reported, not run')
    p.add_argument('--out', default='gpu_scoreboard.jsonl')
    p.add_argument('--md', default=None, help='also write the table here (markdown)')
    p.add_argument('--worker', default=None, help=argparse.SUPPRESS)
    p.add_argument('--deadline', type=float, default=None, help=argparse.SUPPRESS)
    return p.parse_args(argv)


# ---------------------------------------------------------------------------------------------
# Worker: one impl, its workloads one after another, one JSON line per run on stdout.

def _amp_on(device_type):
    """Points the shared raw torch step's `torch.autocast('cpu', ...)` and
    `torch.amp.GradScaler('cpu', ...)` at `device_type` (its only device-specific lines)."""
    import torch
    autocast, grad_scaler = torch.autocast, torch.amp.GradScaler
    torch.autocast = lambda _device_type, **kwargs: autocast(device_type, **kwargs)
    torch.amp.GradScaler = lambda _device='cuda', **kwargs: grad_scaler(device_type, **kwargs)


def _raw_runner(common, device):
    import torch
    import impl_raw_torch
    _amp_on(device.type)

    def to_device(batch):
        return {k: v.to(device, non_blocking=True) for k, v in batch.items()}

    def prepare(workload):
        torch.manual_seed(common.SEED)
        with torch.device(device):
            step, to_t = impl_raw_torch.build(workload)
        pin = device.type == 'cuda'
        batches = [{k: v.pin_memory() if pin else v for k, v in to_t(b).items()}
                   for b in common.make_data(workload)]
        return (lambda batch: step(to_device(batch))), batches, lambda: None
    return prepare


def _keras2_runner(common):
    import numpy as np
    import keras
    import keras2_models

    def prepare(workload):
        np.random.seed(common.SEED)
        common.set_precision(keras)
        model, split = keras2_models.build(keras, common.base_workload(workload))
        batches = [split(b) for b in common.make_data(workload)]

        def step(p):
            if workload in common.PREDICT:
                return float(np.asarray(model.predict_on_batch(p[0])).mean())
            out = model.train_on_batch(p[0], p[1])
            return float(np.asarray(out[0] if isinstance(out, (list, tuple)) else out))
        return step, batches, keras.backend.clear_session
    return prepare


def _keras3_runner(common):
    import numpy as np
    import keras
    import impl_keras3_torch

    def prepare(workload):
        keras.utils.set_random_seed(common.SEED)
        common.set_precision(keras)
        model, split = impl_keras3_torch.build(keras, workload)
        batches = [split(b) for b in common.make_data(workload)]

        def step(p):
            xs, y = p
            x = xs[0] if len(xs) == 1 else list(xs)
            if workload in common.PREDICT:
                return float(np.asarray(model.predict_on_batch(x)).mean())
            return float(np.asarray(model.train_on_batch(x, y)))
        return step, batches, keras.backend.clear_session
    return prepare


def worker(args):
    spec = IMPLS[args.worker]
    os.environ['BENCH_PRECISION'] = spec['precision']
    sys.path.insert(0, os.path.abspath(args.bench_dir))
    import torch
    import bench_common as common
    device = torch.device(args.device)
    torch.set_num_threads(common.THREADS)
    torch.backends.cuda.matmul.allow_tf32 = args.tf32 == '1'
    torch.backends.cudnn.allow_tf32 = args.tf32 == '1'
    cuda = device.type == 'cuda'
    if spec['kind'] == 'raw':
        prepare = _raw_runner(common, device)
    elif spec['kind'] == 'keras2':
        prepare = _keras2_runner(common)
    else:
        prepare = _keras3_runner(common)
    impl = args.worker.split('@')[0]
    cpu_batch = {w: common.WORKLOADS[w]['batch'] for w in WORKLOADS}
    for workload in [w for w in args.workloads if w in spec.get('workloads', WORKLOADS)]:
        for batch_kind in args.batches:
            common.WORKLOADS[workload]['batch'] = (GPU_BATCH if batch_kind == 'gpu'
                                                   else cpu_batch)[workload]
            extra = {'batch': common.WORKLOADS[workload]['batch'], 'batch_kind': batch_kind,
                     'device': str(device), 'tf32': args.tf32 == '1'}
            if cuda:
                extra['gpu'] = torch.cuda.get_device_name(device)
            if time.time() > args.deadline:
                common.emit_error(impl, workload, 1, 'not run: the time budget was spent',
                                  extra)
                continue
            try:
                if cuda:
                    torch.cuda.empty_cache()
                    torch.cuda.reset_peak_memory_stats(device)
                step, batches, clear = prepare(workload)
                start = time.perf_counter()
                times, losses, first = common.timed_loop(
                    step, batches, common.WORKLOADS[workload]['steps'])
                extra['warmup_s'] = round(time.perf_counter() - start - sum(times), 2)
                if cuda:
                    extra['peak_gpu_mb'] = round(
                        torch.cuda.max_memory_allocated(device) / 2 ** 20, 1)
                common.emit(impl, workload, 1, times, losses, first,
                            versions={'torch': torch.__version__}, extra=extra)
                del step, batches
                clear()
            except Exception as e:  # noqa: BLE001 -- one error row per run, then go on
                import traceback
                traceback.print_exc(file=sys.stderr)
                common.emit_error(impl, workload, 1, '%s: %s' % (type(e).__name__,
                                                                str(e)[:300]), extra)


# ---------------------------------------------------------------------------------------------
# Driver: one worker process per impl, then the table.

def _worker_env(args, impl):
    spec = IMPLS[impl]
    env = dict(os.environ, TORCHK_DEVICE=args.device, TORCHK_TF32=args.tf32,
               PYTHONUNBUFFERED='1', **spec.get('env', {}))
    env.setdefault('BENCH_THREADS', '4')
    paths = {'raw': [], 'keras2': [ROOT, args.keras2_path],
             'keras3': [args.keras3_path]}[spec['kind']]
    env['KERAS_BACKEND'] = 'torchk.core' if spec['kind'] == 'keras2' else 'torch'
    env['PYTHONPATH'] = os.pathsep.join(
        [p for p in paths if p] + ([env['PYTHONPATH']] if env.get('PYTHONPATH') else []))
    return env


def run_workers(args):
    """Runs one worker per impl; each record is written as soon as its worker prints it, so
    that a run stopped at a time limit keeps what it measured."""
    deadline = time.time() + args.budget_s
    records = []
    with open(args.out, 'w') as out, open(os.path.splitext(args.out)[0] + '.log', 'w') as log:
        for impl in args.impls:
            started, count = time.time(), 0
            log.write('=== %s\n' % impl)
            log.flush()
            command = [sys.executable, os.path.abspath(__file__), '--worker', impl,
                       '--deadline', str(deadline)] + _forwarded(args)
            worker_process = subprocess.Popen(command, env=_worker_env(args, impl),
                                              stdout=subprocess.PIPE, stderr=log, text=True)
            for line in worker_process.stdout:
                if line.startswith('{'):
                    out.write(line)
                    out.flush()
                    records.append(json.loads(line))
                    count += 1
            returncode = worker_process.wait()
            print('# %-24s %3d runs in %5.1f s (exit %d)'
                  % (impl, count, time.time() - started, returncode), flush=True)
    return records


def _forwarded(args):
    forwarded = ['--bench-dir', args.bench_dir, '--device', args.device, '--tf32', args.tf32,
                 '--workloads'] + args.workloads + ['--batches'] + args.batches
    return forwarded


def table(records):
    """The markdown table: per workload and batch, each impl's median ms/step, its ratio to
    raw torch (float32 eager; @fp16 also to raw torch @fp16) and peak GPU memory."""
    runs = {(r['workload'], r.get('batch'), r['impl']): r for r in records}
    impls = [i for i in IMPLS if any(r['impl'] == i for r in records)]
    header = '| workload | batch | ' + ' | '.join(impls) + ' |'
    lines = [header, '|' + '---|' * (len(impls) + 2)]
    keys = sorted({(r['workload'], r.get('batch')) for r in records},
                  key=lambda k: (WORKLOADS.index(k[0]), k[1] or 0))
    for workload, batch in keys:
        base = runs.get((workload, batch, 'raw_torch'), {}).get('ms_per_step_median')
        base16 = runs.get((workload, batch, 'raw_torch@fp16'), {}).get('ms_per_step_median')
        cells = []
        for impl in impls:
            r = runs.get((workload, batch, impl))
            if r is None:
                cells.append('')
            elif r.get('error'):
                cells.append('error')
            else:
                ms = r['ms_per_step_median']
                cell = '%.2f ms' % ms
                if base:
                    cell += ' (%.2fx' % (ms / base)
                    if impl.endswith('@fp16') and base16 and impl != 'raw_torch@fp16':
                        cell += ', %.2fx fp16' % (ms / base16)
                    cell += ')'
                if r.get('peak_gpu_mb') is not None:
                    cell += ' %d MB' % r['peak_gpu_mb']
                cells.append(cell)
        lines.append('| %s | %s | %s |' % (workload, batch, ' | '.join(cells)))
    errors = ['- %s %s batch %s: %s' % (r['impl'], r['workload'], r.get('batch'), r['error'])
              for r in records if r.get('error')]
    return '\n'.join(lines + ([''] + errors if errors else []))


def main():
    args = parse_args()
    if args.worker:
        return worker(args)
    records = run_workers(args)
    text = table(records)
    print(text)
    if args.md:
        with open(args.md, 'w') as f:
            f.write(text + '\n')


if __name__ == '__main__':
    main()
