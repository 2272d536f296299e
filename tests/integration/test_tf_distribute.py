"""tf.distribute on two CPU processes (gloo), checked against one process.

Each script of tests/integration/tf_distribute_scripts/ runs unchanged twice: as one
process (`python -m torchk run`, one replica on the global batch) and as two
(`torchrun --nproc-per-node 2 -m torchk run`, each replica on half of each global batch).
Both replicas must end with the same weights, and those of the one process, as the
Horovod API's two-process tests check (tests/integration/test_distributed.py).
"""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import keras

from .test_distributed import worker_environment

pytestmark = pytest.mark.skipif(keras.__version__ != '2.3.1',
                                reason='torchk.keras needs Keras 2.3.1')

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'tf_distribute_scripts')
# Generous: with the suite's other workers beside them on two cores, three processes that
# each import torch and Keras take minutes; a module fixture that times out errors every test.
TIMEOUT = 1200
RTOL, ATOL = 1e-5, 1e-7


def _command(script, out, world):
    launcher = [sys.executable, '-m', 'torchk', 'run']
    if world > 1:
        # --standalone: torchrun binds a free port itself (a port picked here and released
        # could be taken by another test's processes before torchrun binds it)
        launcher = [sys.executable, '-m', 'torch.distributed.run', '--standalone',
                    '--nproc-per-node', str(world), '-m', 'torchk', 'run']
    return launcher + [os.path.join(SCRIPTS, script + '.py'), out]


def run_script(script, directory, device='cpu'):
    """Runs `script` as one process and as two at once; returns `{world: (outputs by rank,
    standard output)}`."""
    environment = dict(worker_environment(str(directory)), TORCHK_DEVICE=device)
    processes = {}
    for world in (1, 2):
        out = str(directory / ('world%d' % world))
        processes[world] = (out, subprocess.Popen(
            _command(script, out, world), cwd=str(directory),
            env=environment, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True))
    results = {}
    try:
        for world, (out, process) in processes.items():
            stdout, stderr = process.communicate(timeout=TIMEOUT)
            assert process.returncode == 0, 'world of %d failed:\n%s' % (world, stderr[-4000:])
            results[world] = ([dict(np.load('%s.rank%d.npz' % (out, rank)))
                               for rank in range(world)], stdout)
    finally:
        for _, process in processes.values():
            if process.poll() is None:
                process.kill()
    return results


@pytest.fixture(scope='module')
def custom_loop(tmp_path_factory):
    return run_script('custom_loop', tmp_path_factory.mktemp('custom_loop'))


@pytest.fixture(scope='module')
def mirrored_fit(tmp_path_factory):
    directory = tmp_path_factory.mktemp('mirrored_fit')
    return directory, run_script('mirrored_fit', directory)


def _weights(outputs, prefix=''):
    keys = sorted((k for k in outputs if k.startswith(prefix + 'weight')),
                  key=lambda k: int(k[len(prefix + 'weight'):]))
    return [outputs[k] for k in keys]


def assert_two_replicas_train_like_one_process(results, prefix='', rtol=RTOL, atol=ATOL):
    (one,), _ = results[1]
    two, _ = results[2]
    assert (int(one['replicas']), int(two[0]['replicas'])) == (1, 2)
    reference = _weights(one, prefix)
    assert len(reference) == 4
    for rank0, rank1, expected in zip(_weights(two[0], prefix), _weights(two[1], prefix),
                                      reference):
        np.testing.assert_array_equal(rank0, rank1)
        np.testing.assert_allclose(rank0, expected, rtol=rtol, atol=atol)


def test_custom_loop_two_replicas_train_like_one_process(custom_loop):
    assert_two_replicas_train_like_one_process(custom_loop)


def test_custom_loop_reduced_losses_are_the_global_batch_losses(custom_loop):
    """`strategy.reduce(SUM)` of the replicas' `compute_average_loss` is the mean loss of
    the global batch, the one process' loss."""
    (one,), _ = custom_loop[1]
    two, _ = custom_loop[2]
    assert len(one['losses']) == 12
    np.testing.assert_allclose(two[0]['losses'], one['losses'], rtol=RTOL)
    np.testing.assert_array_equal(two[0]['losses'], two[1]['losses'])


@pytest.mark.parametrize('step', ['compiled', 'eager'])
def test_fit_two_replicas_train_like_one_process(mirrored_fit, step):
    assert_two_replicas_train_like_one_process(mirrored_fit[1], step + '/')


@pytest.mark.parametrize('step', ['compiled', 'eager'])
@pytest.mark.parametrize('key', ['loss', 'accuracy', 'val_loss', 'val_accuracy', 'evaluate'])
def test_fit_and_evaluate_logs_are_those_of_the_global_batch(mirrored_fit, step, key):
    (one,), _ = mirrored_fit[1][1]
    two, _ = mirrored_fit[1][2]
    name = '%s/%s' % (step, key)
    np.testing.assert_allclose(two[0][name], one[name], rtol=RTOL)
    np.testing.assert_array_equal(two[0][name], two[1][name])


def test_only_the_chief_writes_checkpoints_logs_and_progress(mirrored_fit):
    directory, results = mirrored_fit
    written = {rank: sorted(os.listdir(directory / ('world2.rank%d.logs' % rank)))
               if (directory / ('world2.rank%d.logs' % rank)).exists() else []
               for rank in range(2)}
    expected = ['compiled-1.h5', 'compiled-2.h5', 'compiled-tb', 'eager-1.h5', 'eager-2.h5',
                'eager-tb']
    assert written == {0: expected, 1: []}
    assert sorted(os.listdir(directory / 'world1.rank0.logs')) == expected
    for world in (1, 2):
        assert results[world][1].count('Epoch 1/2') == 2, results[world][1]


@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2,
                    reason='NCCL data parallelism needs two CUDA devices')
@pytest.mark.parametrize('script, prefix', [('custom_loop', ''), ('mirrored_fit', 'compiled/')])
def test_two_replicas_on_nccl(tmp_path, script, prefix):
    assert_two_replicas_train_like_one_process(run_script(script, tmp_path, device='cuda'),
                                               prefix, rtol=1e-5, atol=1e-6)
