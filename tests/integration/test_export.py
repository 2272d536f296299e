"""Keras 2.3.1 models exported with `torchk.export` to `torch.export` programs (`.pt2`) and ONNX,
run at two batch sizes (one of them 1) and two sizes of every axis the model leaves unknown,
against the model's own `predict`; the `.pt2` also in an interpreter where Keras and torchk
cannot be imported, and through `python -m torchk export`.
"""
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

from keras.layers import (GRU, LSTM, Activation, AveragePooling2D, BatchNormalization,
                          Bidirectional, Concatenate, Conv1D, Conv2D, Conv2DTranspose,
                          ConvLSTM2D, Cropping1D, Cropping2D, Dense, DepthwiseConv2D, Dropout,
                          Embedding, Flatten, GlobalAveragePooling1D, GlobalAveragePooling2D,
                          GlobalMaxPooling1D, GlobalMaxPooling2D, Input, LeakyReLU,
                          MaxPooling2D, Permute, PReLU, RepeatVector, Reshape,
                          SeparableConv2D, SimpleRNN, TimeDistributed, UpSampling1D,
                          UpSampling2D, ZeroPadding1D, ZeroPadding2D)
from keras.models import Model, Sequential

from torchk import config
from torchk import export as exporting

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VOCABULARY = 20


def _mlp():
    return Sequential([Dense(8, activation='tanh', input_shape=(5,)), BatchNormalization(),
                       Dropout(0.5), Dense(3, activation='softmax')])


def _cnn():
    return Sequential([Conv2D(4, 3, activation='relu', input_shape=(12, 12, 3)),
                       MaxPooling2D(), BatchNormalization(), Flatten(), Dense(2)])


def _fully_convolutional():
    return Sequential([
        Conv2D(4, 3, padding='same', input_shape=(None, None, 3)),
        SeparableConv2D(4, 3, strides=2, padding='same'), DepthwiseConv2D(3, padding='same'),
        ZeroPadding2D(1), Conv2D(4, 3, strides=2), UpSampling2D(2), Cropping2D(1),
        AveragePooling2D(padding='same'), MaxPooling2D(3, 2, padding='same'),
        LeakyReLU(), PReLU(shared_axes=[1, 2]), GlobalMaxPooling2D()])


def _autoencoder():
    inputs = Input((None, None, 2))
    hidden = Conv2D(4, 3, strides=2, padding='same', activation='relu')(inputs)
    return Model(inputs, Conv2DTranspose(2, 3, strides=2, padding='same')(hidden))


def _masked_text_lstm():
    return Sequential([Embedding(VOCABULARY, 6, mask_zero=True, input_shape=(None,)), LSTM(5),
                       Dense(2)])


def _masked_traced_loop():
    """A cell the fast kernels do not take (recurrent dropout with a mask per gate) runs
    Keras' step function in the traced loop of `K.rnn`, here with a mask."""
    return Sequential([Embedding(VOCABULARY, 6, mask_zero=True, input_shape=(None,)),
                       LSTM(4, implementation=1, recurrent_dropout=0.3, go_backwards=True),
                       Dense(2)])


def _lstm_sequences():
    return Sequential([LSTM(5, return_sequences=True, recurrent_dropout=0.3, dropout=0.2,
                            input_shape=(None, 4)),
                       LSTM(3, go_backwards=True, recurrent_activation='hard_sigmoid')])


def _gru(reset_after):
    def make():
        return Sequential([GRU(5, reset_after=reset_after, recurrent_activation='sigmoid',
                               return_sequences=True, input_shape=(None, 4)),
                           GRU(3, reset_after=reset_after, implementation=1)])
    return make


def _simple_rnn():
    return Sequential([SimpleRNN(5, activation='relu', input_shape=(None, 4))])


def _bidirectional():
    return Sequential([Bidirectional(LSTM(5, recurrent_dropout=0.3, dropout=0.2),
                                     input_shape=(None, 4))])


def _conv_lstm():
    return Sequential([ConvLSTM2D(3, 3, padding='same', input_shape=(None, 6, 6, 2)),
                       GlobalAveragePooling2D()])


def _reshapes():
    return Sequential([Dense(12, input_shape=(6,)), Reshape((3, 4)), Permute((2, 1)),
                       Flatten(), Activation('relu')])


def _time_distributed():
    return Sequential([TimeDistributed(Dense(3), input_shape=(None, 4)),
                       Conv1D(2, 3, padding='causal'), UpSampling1D(2), ZeroPadding1D(1),
                       Cropping1D((1, 0)), GlobalMaxPooling1D()])


def _repeat_vector():
    return Sequential([Dense(3, input_shape=(4,)), RepeatVector(5), GRU(2)])


def _masked_pooling():
    return Sequential([Embedding(VOCABULARY, 4, mask_zero=True, input_shape=(7,)),
                       GlobalAveragePooling1D()])


def _two_inputs_two_outputs():
    sequence, features = Input((None, 4), name='sequence'), Input((3,), name='features')
    summary = LSTM(3)(sequence)
    return Model([sequence, features],
                 [Dense(2, name='scores')(Concatenate()([summary, features])),
                  Dense(1, name='value')(features)])


FAMILIES = {
    'mlp_batchnorm_dropout': _mlp, 'cnn': _cnn, 'fully_convolutional': _fully_convolutional,
    'conv2d_transpose_autoencoder': _autoencoder, 'masked_text_lstm': _masked_text_lstm,
    'masked_traced_loop': _masked_traced_loop,
    'lstm_dropout_backwards_hard_sigmoid': _lstm_sequences, 'gru': _gru(False),
    'gru_reset_after': _gru(True), 'simple_rnn': _simple_rnn,
    'bidirectional_lstm': _bidirectional, 'conv_lstm2d': _conv_lstm, 'reshapes': _reshapes,
    'time_distributed_conv1d': _time_distributed, 'repeat_vector_gru': _repeat_vector,
    'masked_pooling': _masked_pooling, 'two_inputs_two_outputs': _two_inputs_two_outputs,
}


def _randomized(model):
    """`model` with random weights (positive moving variances), so that every weight and
    batch norm's moving statistics show in the outputs."""
    rng = np.random.RandomState(0)
    model.set_weights([
        rng.uniform(0.5, 1.5, w.shape).astype('float32') if 'variance' in v.name
        else rng.normal(0., 0.5, w.shape).astype('float32')
        for v, w in zip(model.weights, model.get_weights())])
    return model


def _inputs(model, batch, size, seed):
    """Inputs for `model`: `batch` samples, `size` along every unknown axis; tokens for
    embeddings, with padding zeros at the end of each sequence."""
    rng = np.random.RandomState(seed)
    values = []
    for x in model.inputs:
        shape = [batch] + [size if d is None else d for d in x.shape[1:]]
        if isinstance(model.layers[0], Embedding):
            tokens = rng.randint(1, VOCABULARY, shape)
            tokens[:, shape[1] // 2 + 1:] = 0
            values.append(tokens.astype(x.dtype))
        else:
            values.append(rng.rand(*shape).astype(x.dtype))
    return values


def _runs(model):
    """(batch, size of unknown axes) pairs: a batch of 1 and another, two sizes (sequences
    of length 1 included; images large enough that no pooling leaves a single cell)."""
    if not any(d is None for x in model.inputs for d in x.shape[1:]):
        return [(1, None), (3, None)]
    if len(model.inputs[0].shape) == 4:
        return [(1, 24), (3, 17)]
    return [(1, 1), (3, 13)]


def _assert_close(outputs, expected):
    expected = expected if isinstance(expected, list) else [expected]
    assert len(outputs) == len(expected)
    for output, reference in zip(outputs, expected):
        assert output.shape == reference.shape
        scale = max(1., float(np.abs(reference).max()))
        np.testing.assert_allclose(output, reference, rtol=0, atol=1e-5 * scale)


@pytest.fixture(scope='module')
def exported(tmp_path_factory):
    """Each family's model, exported once to both formats: {name: (model, pt2, onnx)}."""
    cache = {}

    def get(name):
        if name not in cache:
            model = _randomized(FAMILIES[name]())
            folder = tmp_path_factory.mktemp(name)
            pt2, onnx = str(folder / 'model.pt2'), str(folder / 'model.onnx')
            exporting.export(model, pt2)
            cache[name] = (model, pt2, onnx)
        return cache[name]
    return get


@pytest.mark.parametrize('name', sorted(FAMILIES))
def test_pt2_matches_predict_at_two_batch_sizes_and_lengths(name, exported):
    model, pt2, _ = exported(name)
    program = torch.export.load(pt2).module()
    for seed, (batch, size) in enumerate(_runs(model)):
        inputs = _inputs(model, batch, size, seed)
        with torch.no_grad():
            outputs = program(*[torch.from_numpy(x) for x in inputs])
        outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        _assert_close([o.numpy() for o in outputs], model.predict(inputs))


@pytest.mark.parametrize('name', sorted(FAMILIES))
def test_onnx_matches_predict_at_two_batch_sizes_and_lengths(name, exported):
    onnxruntime = pytest.importorskip('onnxruntime')
    pytest.importorskip('onnxscript')
    model, _, onnx = exported(name)
    exporting.export(model, onnx)
    session = onnxruntime.InferenceSession(onnx, providers=['CPUExecutionProvider'])
    assert [i.name for i in session.get_inputs()] == model.input_names
    assert [o.name for o in session.get_outputs()] == model.output_names
    for seed, (batch, size) in enumerate(_runs(model)):
        inputs = _inputs(model, batch, size, seed)
        outputs = session.run(None, dict(zip(model.input_names, inputs)))
        _assert_close(outputs, model.predict(inputs))


def test_program_inputs_are_named_and_ordered_after_the_model():
    model = _two_inputs_two_outputs()
    program = exporting.exported_program(model)
    assert list(program.graph_signature.user_inputs) == ['sequence', 'features']
    sequence, features = _inputs(model, 2, 4, 0)
    scores, value = program.module()(torch.from_numpy(sequence), torch.from_numpy(features))
    assert scores.shape == (2, 2) and value.shape == (2, 1)


def test_programs_are_traced_on_the_cpu_whatever_torchks_device(monkeypatch):
    """Off the CPU (a GPU; here torchk's device is set to `meta` to take that path), the
    trace runs on the CPU with copies of the weights, leaving the model's variables and
    torchk's device as they were."""
    model = _randomized(_mlp())
    variables = [(w, w.device) for w in model.weights]
    x = np.random.rand(3, 5).astype('float32')
    expected = model.predict(x)
    monkeypatch.setattr(config, '_DEVICE', torch.device('meta'))
    program = exporting.exported_program(model)
    assert config.device() == torch.device('meta')
    assert all(w is now and w.device == device for (w, device), now in zip(variables,
                                                                         model.weights))
    assert {value.device.type for value in program.state_dict.values()} == {'cpu'}
    with torch.no_grad():
        np.testing.assert_allclose(program.module()(torch.from_numpy(x)).numpy(), expected,
                                   rtol=1e-6, atol=1e-6)


def test_weights_are_frozen_copies_that_do_not_require_gradients():
    model = _randomized(_mlp())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        program = exporting.exported_program(model)
    assert not [w for w in caught if 'grad' in str(w.message)]
    assert len(program.state_dict) == len(model.weights)
    for value in program.state_dict.values():
        assert type(value) in (torch.Tensor, torch.nn.Parameter) and not value.requires_grad
    x = np.random.rand(4, 5).astype('float32')
    before = model.predict(x)
    model.set_weights([w + 1. for w in model.get_weights()])
    with torch.no_grad():
        np.testing.assert_allclose(program.module()(torch.from_numpy(x)).numpy(), before,
                                   rtol=0, atol=1e-6)


def test_static_batch_fixes_the_batch_size():
    model = _randomized(_masked_text_lstm())
    program = exporting.exported_program(model, static_batch=4)
    placeholder = [n for n in program.graph.nodes if n.op == 'placeholder'][-1]
    assert placeholder.meta['val'].shape[0] == 4
    inputs = _inputs(model, 4, 6, 0)
    with torch.no_grad():
        _assert_close([program.module()(torch.from_numpy(inputs[0])).numpy()],
                      model.predict(inputs))


def test_export_errors_name_the_problem(tmp_path):
    model = _mlp()
    with pytest.raises(ValueError, match=r"ending in \.pt2 or \.onnx"):
        exporting.export(model, str(tmp_path / 'model.h5'))
    with pytest.raises(ValueError, match='opset=17 applies to ONNX files only'):
        exporting.export(model, str(tmp_path / 'model.pt2'), opset=17)
    with pytest.raises(ValueError, match='static_batch must be a positive integer'):
        exporting.exported_program(model, static_batch=0)
    with pytest.raises(ValueError, match='Build it first'):
        exporting.exported_program(Sequential([Dense(2)]))


def test_ctc_decoding_is_refused_naming_the_layer():
    from keras import backend as K
    from keras.layers import Lambda
    probabilities, lengths = Input((None, 5)), Input((1,), dtype='int64')
    decoded = Lambda(lambda t: K.ctc_decode(t[0], K.flatten(t[1]))[0][0],
                     name='greedy_decoder')([probabilities, lengths])
    with pytest.raises(ValueError, match="layer 'greedy_decoder' decodes CTC"):
        exporting.exported_program(Model([probabilities, lengths], decoded))


_RUN_WITHOUT_KERAS = '''
import sys
for blocked in ('keras', 'torchk', 'tensorflow'):
    sys.modules[blocked] = None     # `import keras` now raises ImportError
import numpy as np
import torch
program = torch.export.load(sys.argv[1]).module()
inputs = np.load(sys.argv[2])
with torch.no_grad():
    outputs = program(*[torch.from_numpy(inputs[k]) for k in sorted(inputs.files)])
outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
np.savez(sys.argv[3], *[o.numpy() for o in outputs])
assert not [m for m in sys.modules if m.split('.')[0] in ('keras', 'torchk') and sys.modules[m]]
'''


def _run_without_keras(pt2, inputs, tmp_path):
    np.savez(str(tmp_path / 'inputs.npz'), **{'x%02d' % i: x for i, x in enumerate(inputs)})
    environment = {k: v for k, v in os.environ.items()
                   if k not in ('PYTHONPATH', 'KERAS_BACKEND')}
    done = subprocess.run(
        [sys.executable, '-c', _RUN_WITHOUT_KERAS, pt2, str(tmp_path / 'inputs.npz'),
         str(tmp_path / 'outputs.npz')], env=environment, cwd=str(tmp_path),
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    saved = np.load(str(tmp_path / 'outputs.npz'))
    return [saved['arr_%d' % i] for i in range(len(saved.files))]


@pytest.mark.parametrize('name', ['masked_text_lstm', 'two_inputs_two_outputs',
                                  'conv_lstm2d'])
def test_pt2_runs_where_keras_and_torchk_cannot_be_imported(name, exported, tmp_path):
    model, pt2, _ = exported(name)
    inputs = _inputs(model, 2, 5, 0)
    _assert_close(_run_without_keras(pt2, inputs, tmp_path), model.predict(inputs))


def test_cli_exports_a_saved_model(tmp_path):
    model = _randomized(_masked_text_lstm())
    model.save(str(tmp_path / 'model.h5'))
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [REPO, os.environ.get('PYTHONPATH', '')]))
    done = subprocess.run(
        [sys.executable, '-m', 'torchk', 'export', str(tmp_path / 'model.h5'),
         str(tmp_path / 'model.pt2'), '--static-batch', '2'], env=environment,
        cwd=str(tmp_path), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert 'inputs %s, outputs %s' % (model.input_names[0], model.output_names[0]) \
        in done.stdout
    inputs = _inputs(model, 2, 5, 0)
    _assert_close(_run_without_keras(str(tmp_path / 'model.pt2'), inputs, tmp_path),
                  model.predict(inputs))
    done = subprocess.run(
        [sys.executable, '-m', 'torchk', 'export', str(tmp_path / 'missing.h5'),
         str(tmp_path / 'model.onnx')], env=environment, cwd=str(tmp_path),
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and 'No model file' in done.stderr


def test_text_model_exports_its_numbers_and_saves_its_string_stage(tmp_path):
    """The string stage stays in Python: export writes it beside the program as a .keras
    file; the stage's outputs fed to the program give the model's predictions."""
    import keras
    texts = np.array(['good film', 'bad dull film', 'good good', 'über bad'])
    review = Input(shape=(1,), dtype='string', name='review')
    count = Input(shape=(1,), name='count')
    vectorize = keras.layers.TextVectorization(output_sequence_length=4)
    vectorize.adapt(texts)
    x = GlobalAveragePooling1D()(Embedding(8, 3)(vectorize(review)))
    model = _randomized(Model([review, count], Dense(1)(Concatenate()([x, count]))))
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [REPO, os.environ.get('PYTHONPATH', '')]))
    model.save(str(tmp_path / 'text.keras'))
    done = subprocess.run(
        [sys.executable, '-m', 'torchk', 'export', str(tmp_path / 'text.keras'),
         str(tmp_path / 'text.pt2')], env=environment, cwd=str(tmp_path),
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert 'string stage stays in Python' in done.stdout
    stage = keras.models.load_model(str(tmp_path / 'text.string_stage.keras'))
    counts = np.arange(4, dtype='float32')[:, None]
    ids = stage.predict(texts[:, None])
    program = torch.export.load(str(tmp_path / 'text.pt2')).module()
    _assert_close([program(torch.from_numpy(counts), torch.from_numpy(ids)).numpy()],
                  model.predict([texts[:, None], counts]))
    with pytest.raises(ValueError, match='takes text'):
        exporting.exported_program(model)
