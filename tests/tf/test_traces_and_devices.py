"""`tf.summary` traces, `tf.profiler.experimental`, `tf.config`'s device queries (TF 2.21's
answers on a CPU machine as the reference: `get_memory_info('CPU:0')` is
`{'current': 0, 'peak': 0}`, `get_device_details` of the CPU `{}`, soft placement on, a
missing GPU "No matching devices found for 'GPU:0'"), and TF's error classes from ops."""
import glob
import json

import numpy as np
import pytest
import torch

import torchk.keras as keras
import torchk.tf as tf
from event_files import read_events


@tf.function
def double(x):
    return x * 2.


def test_trace_export_writes_the_functions_called(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    tf.summary.trace_on(graph=True)
    double(tf.constant([1., 2.]))
    with writer.as_default():
        assert tf.summary.trace_export('my_func_trace', step=0)
    events = read_events(tmp_path)
    (event,) = events.Tensors('my_func_trace/text_summary')
    text = event.tensor_proto.string_val[0].decode()
    assert event.step == 0 and 'tf.function double' in text and 'return x * 2.' in text
    assert "TensorSpec(shape=(2,), dtype='float32'" in text
    assert tf.summary.trace_export('again', step=1) is False  # the trace ended


def test_profiler_writes_a_trace(tmp_path):
    tf.profiler.experimental.start(str(tmp_path))
    with tf.profiler.experimental.Trace('train', step_num=1):
        double(tf.ones([4]))
    tf.profiler.experimental.stop()
    (path,) = glob.glob(str(tmp_path / '*.pt.trace.json'))
    with open(path) as f:
        names = {event.get('name') for event in json.load(f)['traceEvents']}
    assert 'train#step_num=1' in names
    with pytest.raises(RuntimeError, match='no profile is running'):
        tf.profiler.experimental.stop()


def test_trace_with_profiler(tmp_path):
    tf.summary.trace_on(graph=True, profiler=True, profiler_outdir=str(tmp_path / 'unused'))
    double(tf.ones([3]))
    with tf.summary.create_file_writer(str(tmp_path / 'logs')).as_default():
        tf.summary.trace_export('trace', step=0, profiler_outdir=str(tmp_path / 'profile'))
    assert glob.glob(str(tmp_path / 'profile' / '*.pt.trace.json'))


def test_device_queries_answer_as_tf():
    cpu, = tf.config.list_physical_devices('CPU')
    assert tf.config.list_logical_devices('CPU') == [tf.config.LogicalDevice('CPU', 0)]
    assert repr(tf.config.list_logical_devices()[0]) == (
        "LogicalDevice(name='/device:CPU:0', device_type='CPU')")
    assert tf.config.experimental.get_memory_info('CPU:0') == {'current': 0, 'peak': 0}
    assert tf.config.experimental.get_device_details(cpu) == {}
    assert tf.config.get_soft_device_placement() is True
    tf.config.set_soft_device_placement(False)
    assert tf.config.get_soft_device_placement() is False
    tf.config.set_soft_device_placement(True)
    configuration = tf.config.LogicalDeviceConfiguration(memory_limit=1024)
    tf.config.set_logical_device_configuration(cpu, [configuration])
    assert tf.config.get_logical_device_configuration(cpu) == [configuration]
    tf.config.set_logical_device_configuration(cpu, [configuration, configuration])
    assert len(tf.config.list_logical_devices('CPU')) == 2  # TF's logical CPUs
    tf.config.set_logical_device_configuration(cpu, [configuration])
    missing = 'GPU:%d' % torch.cuda.device_count()
    with pytest.raises(ValueError, match="No matching devices found for '%s'" % missing):
        tf.config.experimental.get_memory_info(missing)


@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a GPU')
def test_gpu_memory_queries():
    gpu = tf.config.list_physical_devices('GPU')[0]
    details = tf.config.experimental.get_device_details(gpu)
    assert details['device_name'] == torch.cuda.get_device_name(0)
    before = tf.config.experimental.get_memory_info('GPU:0')['current']
    block = torch.empty(1 << 20, device='cuda:0')
    assert tf.config.experimental.get_memory_info('GPU:0')['current'] >= before + (4 << 20)
    del block


def test_op_errors_are_tf_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match='cannot be multiplied') as error:
        tf.matmul(tf.ones([1, 4]), tf.ones([3, 3]))
    assert isinstance(error.value, ValueError)


def test_layer_called_on_python_numbers():
    layer = keras.layers.Dense(2)
    result = layer([[2.0, 2.0, 2.0]])
    np.testing.assert_allclose(result.numpy(), layer(np.full((1, 3), 2., 'float32')).numpy())
    assert result.dtype == torch.float32
