"""Model files saved by TensorFlow's Keras 2 (issue 18's fixtures) export to `.pt2` and ONNX,
and the exported programs compute TensorFlow's predictions (issue 19).

The other keras.applications models export the same way (benchmarks/export_step.py
`files` measures them all); CI exports MobileNetV2, the scoreboard's model, to keep its time.
"""
import glob
import os

import pytest
import torch

import keras

from torchk import export as exporting

from .test_tf_keras_models import (MAIN_DIALECT, MODELS, _arrays, _max_relative_difference,
                                   _model_file)

APPLICATIONS_IN_CI = ('mobilenet_v2',)


def exportable_fixtures(applications=APPLICATIONS_IN_CI):
    """The names of the main dialect's model fixtures to export: every model written out,
    and the keras.applications models among `applications` (None: all)."""
    names = []
    for arrays in sorted(glob.glob(os.path.join(MODELS, MAIN_DIALECT, '*.npz'))):
        name = os.path.basename(arrays)[:-len('.npz')]
        application = os.path.exists(os.path.join(MODELS, MAIN_DIALECT,
                                                  name + '.skeleton.h5.gz'))
        if not application or applications is None or name in applications:
            names.append(name)
    return names


def loaded_fixture(name, directory):
    """The fixture model loaded with Keras, its inputs and TensorFlow's predictions."""
    model = keras.models.load_model(_model_file(MAIN_DIALECT, name, directory), compile=False,
                                    safe_mode=False)  # the lambda_model fixture: trusted
    inputs, _, predictions, _ = _arrays(MAIN_DIALECT, name)
    return model, inputs, predictions


def pt2_outputs(path, inputs):
    """The outputs of the `.pt2` program at `path` on `inputs` (numpy), as a list."""
    outputs = torch.export.load(str(path)).module()(*[torch.from_numpy(x) for x in inputs])
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    return [o.numpy() for o in outputs]


def onnx_outputs(path, model, inputs):
    """The outputs of the ONNX model at `path` run by onnxruntime on `inputs`."""
    import onnxruntime
    session = onnxruntime.InferenceSession(str(path), providers=['CPUExecutionProvider'])
    return session.run(None, dict(zip(model.input_names, inputs)))


@pytest.mark.parametrize('name', exportable_fixtures())
def test_model_file_exports_and_computes_tensorflows_predictions(name, tmp_path):
    pytest.importorskip('onnxruntime')
    pytest.importorskip('onnxscript')
    model, inputs, predictions = loaded_fixture(name, tmp_path)
    exporting.export(model, tmp_path / 'model.pt2')
    assert _max_relative_difference(pt2_outputs(tmp_path / 'model.pt2', inputs),
                                    predictions) < 1e-5
    exporting.export(model, tmp_path / 'model.onnx')
    assert _max_relative_difference(onnx_outputs(tmp_path / 'model.onnx', model, inputs),
                                    predictions) < 1e-5
