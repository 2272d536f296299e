"""torchk.saving.protos: its message classes are made on first use, so torchk's tf.keras
imports without protobuf, and a checkpoint read without it names the package to install."""
import subprocess
import sys

from torchk.saving import protos

_WITHOUT_PROTOBUF = (
    'import sys\n'
    'sys.modules["google.protobuf"] = None\n'
    'import torchk.tf\n'
    'torchk.tf.install_import_hook()\n'
    'import tensorflow as tf\n'
    'from tensorflow import keras\n'
    'model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])\n'
    'print(tf.data.Dataset.from_tensor_slices([1., 2.]).batch(2).cardinality().numpy())\n'
    'from torchk.saving import protos\n'
    'try:\n'
    '    protos.SavedModel\n'
    'except ImportError as e:\n'
    '    print(e)\n')


def test_tf_keras_imports_without_protobuf_and_saving_names_it():
    done = subprocess.run([sys.executable, '-c', _WITHOUT_PROTOBUF], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    count, message = done.stdout.strip().splitlines()[-2:]
    assert count == '1'
    assert "pip install 'protobuf>=4.25'" in message


def test_messages_round_trip():
    header = protos.BundleHeaderProto(num_shards=1, endianness=0)
    header.version.producer = 1
    parsed = protos.BundleHeaderProto.FromString(header.SerializeToString())
    assert (parsed.num_shards, parsed.version.producer) == (1, 1)
    assert protos.SavedModel is protos.SavedModel
