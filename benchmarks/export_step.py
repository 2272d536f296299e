"""Exported Keras models: the layer families of tests/integration/test_export.py exported to
`.pt2` and ONNX (export time, dynamic axes, largest difference from `predict`), issue 18's
model files saved by tf_keras (the same, against TensorFlow's predictions), and the
inference speed of the scoreboard's predict_mobilenet model (keras.applications MobileNetV2,
alpha 0.35, 96x96, weights=None, batch 64): Keras `predict_on_batch`, the `torch.export`
program run eagerly, and onnxruntime, interleaved in one process.

Run:  python benchmarks/export_step.py [families|files|mobilenet]   (default: all three)
Needs onnx, onnxscript and onnxruntime (`pip install torchk[export]`).
"""
import os
import pathlib
import sys
import tempfile
import time

import numpy as np
import torch

from common import interleaved_seconds

import keras  # noqa: E402
import onnxruntime  # noqa: E402

from torchk import export as exporting  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from tests.integration import test_export as cases  # noqa: E402
from tests.integration import test_export_model_files as model_files  # noqa: E402


def _dynamic_axes(program):
    """`input:axis` for each input axis the program leaves symbolic."""
    names = program.graph_signature.user_inputs
    placeholders = {n.name: n for n in program.graph.nodes if n.op == 'placeholder'}
    axes = []
    for name in names:
        shape = placeholders[name].meta['val'].shape
        axes += ['%s:%d' % (name, i) for i, d in enumerate(shape) if not isinstance(d, int)]
    return ' '.join(axes)


def _timed_exports(model, pt2, onnx):
    """Exports `model` to the paths `pt2` and `onnx`: the `.pt2` program and both times (s)."""
    start = time.perf_counter()
    program = exporting.export(model, pt2)
    pt2_seconds = time.perf_counter() - start
    start = time.perf_counter()
    exporting.export(model, onnx)
    return program, pt2_seconds, time.perf_counter() - start


def families():
    print('| family | pt2 | onnx | dynamic axes | max diff pt2 | max diff onnx | export s '
          '(pt2, onnx) |')
    print('|---|---|---|---|---|---|---|')
    folder = tempfile.mkdtemp()
    for name in sorted(cases.FAMILIES):
        model = cases._randomized(cases.FAMILIES[name]())
        pt2, onnx = os.path.join(folder, name + '.pt2'), os.path.join(folder, name + '.onnx')
        program, pt2_seconds, onnx_seconds = _timed_exports(model, pt2, onnx)
        loaded = torch.export.load(pt2).module()
        session = onnxruntime.InferenceSession(onnx, providers=['CPUExecutionProvider'])
        pt2_diff = onnx_diff = 0.
        for seed, (batch, size) in enumerate(cases._runs(model)):
            inputs = cases._inputs(model, batch, size, seed)
            expected = model.predict(inputs)
            expected = expected if isinstance(expected, list) else [expected]
            with torch.no_grad():
                outputs = loaded(*[torch.from_numpy(x) for x in inputs])
            outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
            pt2_diff = max([pt2_diff] + [float(np.abs(o.numpy() - e).max())
                                         for o, e in zip(outputs, expected)])
            outputs = session.run(None, dict(zip(model.input_names, inputs)))
            onnx_diff = max([onnx_diff] + [float(np.abs(o - e).max())
                                           for o, e in zip(outputs, expected)])
        print('| %s | yes | yes | %s | %.1e | %.1e | %.1f, %.1f |' % (
            name, _dynamic_axes(program), pt2_diff, onnx_diff, pt2_seconds, onnx_seconds))


def files():
    """Issue 18's model files (the main tf_keras dialect, keras.applications included):
    export times and the largest difference to TensorFlow's predictions."""
    print('| model file | load s | export s (pt2, onnx) | dynamic axes | max diff / scale '
          '(pt2, onnx) |')
    print('|---|---|---|---|---|')
    for name in model_files.exportable_fixtures(applications=None):
        folder = tempfile.mkdtemp()
        start = time.perf_counter()
        model, inputs, predictions = model_files.loaded_fixture(name, pathlib.Path(folder))
        load_seconds = time.perf_counter() - start
        pt2, onnx = os.path.join(folder, 'model.pt2'), os.path.join(folder, 'model.onnx')
        program, pt2_seconds, onnx_seconds = _timed_exports(model, pt2, onnx)
        print('| %s | %.1f | %.1f, %.1f | %s | %.1e, %.1e |' % (
            name, load_seconds, pt2_seconds, onnx_seconds, _dynamic_axes(program),
            model_files._max_relative_difference(model_files.pt2_outputs(pt2, inputs),
                                                 predictions),
            model_files._max_relative_difference(
                model_files.onnx_outputs(onnx, model, inputs), predictions)), flush=True)


def mobilenet(batch=64):
    np.random.seed(0)
    model = keras.applications.MobileNetV2(weights=None, alpha=0.35, classes=10,
                                           input_shape=(96, 96, 3))
    x = np.random.rand(batch, 96, 96, 3).astype('float32')
    folder = tempfile.mkdtemp()
    _, pt2_seconds, onnx_seconds = _timed_exports(model, os.path.join(folder, 'mobilenet.pt2'),
                                                  os.path.join(folder, 'mobilenet.onnx'))
    program = torch.export.load(os.path.join(folder, 'mobilenet.pt2')).module()
    session = onnxruntime.InferenceSession(os.path.join(folder, 'mobilenet.onnx'),
                                           providers=['CPUExecutionProvider'])
    name = exporting.input_names(model)[0]
    tensor = torch.from_numpy(x)

    def run_program():
        with torch.no_grad():
            return program(tensor)
    # with weights=None the softmax is uniform to float32 precision: the differences are
    # measured on the pooled features before the classifier, relative to their scale
    features = keras.models.Model(model.inputs, model.layers[-2].output)
    exporting.export(features, os.path.join(folder, 'features.pt2'))
    exporting.export(features, os.path.join(folder, 'features.onnx'))
    expected = features.predict_on_batch(x)
    with torch.no_grad():
        got_pt2 = torch.export.load(os.path.join(folder, 'features.pt2')).module()(tensor)
    got_onnx = onnxruntime.InferenceSession(os.path.join(folder, 'features.onnx')).run(
        None, {name: x})[0]
    scale = np.abs(expected).max()
    print('max diff of the features / their scale (%.1e): pt2 %.1e, onnx %.1e' % (
        scale, np.abs(got_pt2.numpy() - expected).max() / scale,
        np.abs(got_onnx - expected).max() / scale))
    keras_s, program_s, onnx_s = interleaved_seconds(
        [lambda: model.predict_on_batch(x), run_program,
         lambda: session.run(None, {name: x})], repeats=5, number=5)
    print('export: pt2 %.1f s, onnx %.1f s' % (pt2_seconds, onnx_seconds))
    print('| predict_mobilenet, batch %d, %d threads | ms per batch |' % (
        batch, torch.get_num_threads()))
    print('|---|---|')
    for label, seconds in (('Keras predict_on_batch (torchk)', keras_s),
                           ('torch.export program, eager', program_s),
                           ('onnxruntime', onnx_s)):
        print('| %s | %.1f |' % (label, seconds * 1e3))


if __name__ == '__main__':
    which = sys.argv[1:] or ['families', 'files', 'mobilenet']
    if 'families' in which:
        families()
    if 'files' in which:
        files()
    if 'mobilenet' in which:
        mobilenet()
