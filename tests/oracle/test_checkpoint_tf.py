"""TensorFlow reads the checkpoints torchk writes (`tf.train.Checkpoint` through a
`CheckpointManager`, TF-format `save_weights`), with the values torchk saved, and its
optimizers step on from the restored slots as torchk's do: the by-hand check of
tests/fixtures/make_tf_core_api.py --read-torchk, run in one process."""
import os
import sys

import pytest

pytest.importorskip('tf_keras', reason='the TF oracle needs tensorflow-cpu and tf_keras '
                    "(pip install -e '.[oracle]')")

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'fixtures')
sys.path.insert(0, FIXTURES)

import make_tf_core_api  # noqa: E402
import write_torchk_core_api  # noqa: E402


def test_tensorflow_reads_torchk_checkpoints(tmp_path):
    write_torchk_core_api.write(str(tmp_path))
    make_tf_core_api.read_torchk(str(tmp_path))
