"""Unit tests of `torchk.interop`: `TorchModule` weights, shapes, gradients, learning phase and
config; `to_torch` parameters, inputs and modes; `DataLoaderSequence` batches.

Keras is needed (TorchModule is a Keras layer), but no model is trained here: the training
scenarios are in tests/integration/test_torch_interop.py.
"""
import numpy as np
import pytest
import torch
import torch.nn as nn

from keras import backend as K
from keras.layers import BatchNormalization, Dense, Dropout, Input
from keras.models import Model, Sequential

from torchk import config
from torchk.interop import DataLoaderSequence, KerasModule, TorchModule, to_torch
from torchk.variables import Variable


@pytest.fixture(autouse=True)
def seeded():
    torch.manual_seed(0)
    np.random.seed(0)


def make_block():
    """A module-level factory, importable by name, for the config tests."""
    return nn.Sequential(nn.Linear(4, 6), nn.Tanh())


def _run(outputs, inputs, values, phase=0):
    """Evaluates `outputs` for `values` fed to `inputs`, at learning phase `phase`."""
    return K.function(list(inputs) + [K.learning_phase()], outputs)(list(values) + [phase])


# ------------------------------------------------------------------------------------------
# TorchModule: weights.

def test_parameters_become_the_layers_keras_variables_in_place():
    linear = nn.Linear(4, 3)
    original_weight = linear.weight
    layer = TorchModule(linear)
    assert isinstance(linear.weight, Variable) and isinstance(linear.bias, Variable)
    # Same storage: Keras updates and the module's own forward read the same memory.
    assert linear.weight.data_ptr() == original_weight.data_ptr()
    assert layer.trainable_weights == [linear.weight, linear.bias]
    assert all(a is b for a, b in zip(layer.trainable_weights, linear.parameters()))
    assert layer.non_trainable_weights == []
    assert linear.weight.name == '%s/weight:0' % layer.name


def test_frozen_parameters_and_persistent_buffers_are_non_trainable_weights():
    block = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))
    block[0].bias.requires_grad_(False)
    block[1].register_buffer('scratch', torch.zeros(4), persistent=False)
    layer = TorchModule(block)
    assert [w.name.split('/')[1] for w in layer.trainable_weights] == [
        '0.weight:0', '1.weight:0', '1.bias:0']
    assert [w.name.split('/')[1] for w in layer.non_trainable_weights] == [
        '0.bias:0', '1.running_mean:0', '1.running_var:0', '1.num_batches_tracked:0']
    assert block[1].running_mean is layer.non_trainable_weights[1]
    assert not block[1].running_mean.requires_grad
    assert block[1].num_batches_tracked.dtype == torch.int64
    # A non-persistent buffer is a cache, not state: it stays a plain tensor.
    assert not isinstance(block[1].scratch, Variable)
    assert set(dict(block.named_buffers())) == {
        '1.running_mean', '1.running_var', '1.num_batches_tracked', '1.scratch'}


def test_tied_parameters_stay_one_variable():
    block = nn.Sequential(nn.Linear(3, 3, bias=False), nn.Linear(3, 3, bias=False))
    block[1].weight = block[0].weight
    layer = TorchModule(block)
    assert len(layer.weights) == 1
    assert block[0].weight is block[1].weight is layer.weights[0]


def test_set_weights_is_seen_by_the_module_called_eagerly():
    linear = nn.Linear(2, 1)
    layer = TorchModule(linear)
    layer.set_weights([np.array([[1., 2.]], 'float32'), np.array([0.5], 'float32')])
    # TorchModule moved the module to torchk's device.
    assert linear(torch.tensor([[1., 1.]], device=config.device())).item() == 3.5


# ------------------------------------------------------------------------------------------
# TorchModule: symbolic calls and shapes.

@pytest.mark.parametrize('module, input_shape, output_shape', [
    (nn.Linear(16, 8), (None, 16), (None, 8)),
    (nn.Conv2d(3, 8, 3, padding=1), (None, 3, 12, 12), (None, 8, 12, 12)),
    (nn.Sequential(nn.Linear(16, 5), nn.ReLU(), nn.LayerNorm(5)), (None, 16), (None, 5)),
    (nn.Flatten(), (None, 3, 4), (None, 12)),
], ids=['linear', 'conv2d_channels_first', 'sequential_relu_layernorm', 'no_parameters'])
def test_output_shapes_are_inferred(module, input_shape, output_shape):
    layer = TorchModule(module)
    x = K.placeholder(shape=input_shape)
    assert K.int_shape(layer(x)) == output_shape
    assert layer.compute_output_shape(input_shape) == output_shape


def test_symbolic_call_matches_the_eager_module():
    block = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 2))
    layer = TorchModule(block)
    x = K.placeholder(shape=(None, 3, 8, 8))
    values = np.random.rand(5, 3, 8, 8).astype('float32')
    result = _run([layer(x)], [x], [values])[0]
    with torch.no_grad():
        expected = block(torch.from_numpy(values).to(config.device())).cpu().numpy()
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-6)


def test_several_inputs_and_outputs():
    bilinear = TorchModule(nn.Bilinear(3, 4, 2))
    a, b = K.placeholder(shape=(None, 3)), K.placeholder(shape=(None, 4))
    assert K.int_shape(bilinear([a, b])) == (None, 2)
    assert bilinear.compute_output_shape([(None, 3), (None, 4)]) == (None, 2)

    lstm = TorchModule(nn.LSTM(3, 5, batch_first=True))
    x = K.placeholder(shape=(None, 7, 3))
    outputs = lstm(x)   # (output, (h, c)) flattened
    assert [K.int_shape(o) for o in outputs] == [(None, 7, 5), (1, None, 5), (1, None, 5)]
    assert lstm.compute_output_shape((None, 7, 3)) == [(None, 7, 5), (1, None, 5), (1, None, 5)]


def test_input_dtype_of_an_embedding():
    layer = TorchModule(nn.Embedding(10, 4), dtype='int64')
    assert layer.compute_output_shape((None, 6)) == (None, 6, 4)
    ids = K.placeholder(shape=(None, 6), dtype='int32')
    assert K.int_shape(layer(ids)) == (None, 6, 4)
    assert layer.compute_output_shape((None, 3)) == (None, 3, 4)


def test_gradients_reach_the_module_parameters():
    block = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.LayerNorm(5), nn.Linear(5, 1))
    layer = TorchModule(block)
    x = K.placeholder(shape=(None, 4))
    loss = K.mean(K.square(layer(x)))
    grads = K.gradients(loss, layer.trainable_weights)
    assert all(g is not None for g in grads)
    values = np.random.rand(6, 4).astype('float32')
    computed = _run(grads, [x], [values])

    block.zero_grad()
    block(torch.from_numpy(values).to(config.device())).square().mean().backward()
    for got, parameter in zip(computed, block.parameters()):
        np.testing.assert_allclose(got, parameter.grad.cpu().numpy(), rtol=1e-5, atol=1e-6)


def test_learning_phase_sets_the_module_mode_then_restores_it():
    block = nn.Sequential(nn.Dropout(0.5))
    block.eval()
    layer = TorchModule(block)
    x = K.placeholder(shape=(None, 1000))
    y = layer(x)
    assert y._uses_learning_phase
    ones = np.ones((2, 1000), 'float32')
    np.testing.assert_array_equal(_run([y], [x], [ones], phase=0)[0], ones)
    trained = _run([y], [x], [ones], phase=1)[0]
    assert set(np.unique(trained)) == {0., 2.}
    assert not block.training and not block[0].training
    # `training=` given to the call overrides the learning phase.
    np.testing.assert_array_equal(
        K.function([x], [layer(x, training=False)])([ones])[0], ones)


# ------------------------------------------------------------------------------------------
# TorchModule: construction errors and config.

def test_get_config_without_a_factory_explains_what_is_needed():
    layer = TorchModule(nn.Linear(2, 2), name='block')
    with pytest.raises(NotImplementedError, match=r"'block' wraps a Linear.*factory="):
        layer.get_config()


def test_config_round_trip_with_a_factory():
    layer = TorchModule(factory=make_block, name='made')
    config = layer.get_config()
    assert config['factory'] == '%s:make_block' % __name__
    assert config['name'] == 'made'
    rebuilt = TorchModule.from_config(config)
    assert isinstance(rebuilt.module, nn.Sequential) and rebuilt.module is not layer.module
    assert rebuilt.name == 'made' and rebuilt.factory == layer.factory
    assert [tuple(w.shape) for w in rebuilt.weights] == [(6, 4), (6,)]


def test_given_module_with_its_factory_uses_the_module():
    block = make_block()
    layer = TorchModule(block, factory='%s:make_block' % __name__)
    assert layer.module is block


def test_construction_errors():
    with pytest.raises(TypeError, match='needs a torch.nn.Module'):
        TorchModule()
    with pytest.raises(TypeError, match='got a builtin_function_or_method.*Lambda'):
        TorchModule(torch.tanh)
    with pytest.raises(ValueError, match='importable by name'):
        TorchModule(factory=lambda: nn.Linear(2, 2))
    with pytest.raises(ValueError, match='importable by name'):
        TorchModule(factory='no_such_module_here:make')
    with pytest.raises(TypeError, match='returned a dtype; expected a torch.nn.Module'):
        TorchModule(factory='torch:get_default_dtype')


# ------------------------------------------------------------------------------------------
# to_torch.

def _mlp_with_batchnorm():
    return Sequential([Dense(6, input_shape=(4,)), BatchNormalization(), Dropout(0.5),
                       Dense(2)])


def test_parameters_are_the_models_trainable_weights():
    K.clear_session()  # variable names repeat only in a fresh session: 'dense_1/kernel:0'
    model = _mlp_with_batchnorm()
    module = to_torch(model)
    assert isinstance(module, KerasModule) and module.keras_model is model
    assert [id(p) for p in module.parameters()] == [id(w) for w in model.trainable_weights]
    assert [id(b) for b in module.buffers()] == [id(w) for w in model.non_trainable_weights]
    dense, batch_norm = model.layers[:2]
    names = [name for name, _ in module.named_parameters()]
    assert names[:2] == ['layers.%s.kernel' % dense.name, 'layers.%s.bias' % dense.name]
    assert dict(module.named_buffers())['layers.%s.moving_mean' % batch_norm.name] \
        is batch_norm.moving_mean


def test_frozen_layer_weights_are_buffers():
    model = _mlp_with_batchnorm()
    model.layers[0].trainable = False
    module = to_torch(model)
    kernel = model.layers[0].kernel
    assert all(p is not kernel for p in module.parameters())
    assert any(b is kernel for b in module.buffers())


def test_forward_matches_predict_and_carries_gradients_to_inputs():
    model = _mlp_with_batchnorm()
    module = to_torch(model).eval()
    x = torch.randn(5, 4, requires_grad=True)
    y = module(x)
    np.testing.assert_allclose(y.detach().numpy(), model.predict(x.detach().numpy()),
                               rtol=1e-5, atol=1e-6)
    y.sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0
    assert model.layers[0].kernel.grad is not None


def test_train_mode_uses_learning_phase_1_and_applies_updates():
    model = _mlp_with_batchnorm()
    module = to_torch(model)
    moving_mean = model.layers[1].moving_mean
    before = K.get_value(moving_mean)
    x = torch.randn(64, 4) + 3.
    with torch.no_grad():
        module.eval()
        first, second = module(x), module(x)
        np.testing.assert_array_equal(first.numpy(), second.numpy())
        np.testing.assert_array_equal(K.get_value(moving_mean), before)
        module.train()
        first, second = module(x), module(x)
    assert not np.array_equal(first.numpy(), second.numpy())   # dropout is active
    assert not np.array_equal(K.get_value(moving_mean), before)


def test_several_inputs_and_outputs_and_numpy_feeds():
    a, b = Input(shape=(2,)), Input(shape=(3,))
    hidden = Dense(4)(a)
    model = Model([a, b], [hidden, Dense(1)(b)])
    module = to_torch(model)
    first, second = module(np.ones((2, 2)), torch.ones(2, 3, dtype=torch.float64))
    assert first.shape == (2, 4) and second.shape == (2, 1)
    assert first.dtype == torch.float32 and second.dtype == torch.float32


def test_forward_errors_name_the_problem():
    module = to_torch(Sequential([Dense(2, input_shape=(4,))]))
    with pytest.raises(ValueError, match=r'takes 1 input\(s\).*forward got 2'):
        module(torch.ones(1, 4), torch.ones(1, 4))
    with pytest.raises(ValueError, match=r"shape \(3, 5\) to input 0 \('dense_\d+_input'\), "
                                         r"which has shape \(None, 4\)"):
        module(torch.ones(3, 5))
    with pytest.raises(ValueError, match='Build it first'):
        to_torch(Sequential([Dense(2)]))


def _tanh_mlp():
    return Sequential([Dense(6, activation='tanh', input_shape=(4,)), BatchNormalization(),
                       Dense(2)])


def _detached(named):
    return {name: tensor.detach().clone() for name, tensor in named}


def test_functional_call_runs_on_the_given_parameters_and_buffers():
    model, other = _tanh_mlp(), _tanh_mlp()
    other.set_weights([np.random.randn(*w.shape).astype('float32')
                       for w in other.get_weights()])
    other.layers[1].set_weights([w + 1. if i == 3 else w
                                 for i, w in enumerate(other.layers[1].get_weights())])
    module, reference = to_torch(model).eval(), to_torch(other).eval()
    x = np.random.randn(5, 4).astype('float32')
    # the same model's layers have other names in `other`: its tensors by position
    state = {name: tensor.detach().clone() for (name, _), tensor in zip(
        list(module.named_parameters()) + list(module.named_buffers()),
        list(reference.parameters()) + list(reference.buffers()))}
    with torch.no_grad():
        swapped = torch.func.functional_call(module, state, (torch.from_numpy(x),))
        zeroed = torch.func.functional_call(
            module, {name: torch.zeros_like(p) for name, p in module.named_parameters()},
            (torch.from_numpy(x),))
    np.testing.assert_allclose(swapped.numpy(), other.predict(x), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(zeroed.numpy(), np.zeros((5, 2), 'float32'))
    np.testing.assert_allclose(module(torch.from_numpy(x)).detach().numpy(), model.predict(x),
                               rtol=1e-5, atol=1e-6)


def test_functional_call_in_train_mode_updates_the_given_buffers():
    model = _tanh_mlp()
    module = to_torch(model).train()
    moving_mean = model.layers[1].moving_mean
    before = K.get_value(moving_mean)
    buffers = _detached(module.named_buffers())
    x = torch.randn(32, 4) + 3.
    with torch.no_grad():
        torch.func.functional_call(module, buffers, (x,))
    np.testing.assert_array_equal(K.get_value(moving_mean), before)
    name = 'layers.%s.moving_mean' % model.layers[1].name
    assert not np.array_equal(buffers[name].numpy(), before)


def test_torch_func_grad_equals_autograd():
    module = to_torch(_tanh_mlp()).eval()
    parameters = _detached(module.named_parameters())
    x = torch.randn(7, 4)

    def loss(parameters, x):
        return torch.func.functional_call(module, parameters, (x,)).pow(2).sum()
    grads = torch.func.grad(loss)(parameters, x)
    module.zero_grad()
    module(x).pow(2).sum().backward()
    for name, parameter in module.named_parameters():
        assert parameter.grad.abs().max() > 0
        np.testing.assert_allclose(grads[name].detach().numpy(), parameter.grad.numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_per_sample_gradients_with_vmap_equal_a_loop_of_backward():
    module = to_torch(_tanh_mlp()).eval()
    parameters = _detached(module.named_parameters())
    x = torch.randn(5, 4)

    def loss(parameters, sample):
        return torch.func.functional_call(module, parameters, (sample[None],)).pow(2).sum()
    per_sample = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0))(parameters, x)
    for i in range(len(x)):
        module.zero_grad()
        module(x[i:i + 1]).pow(2).sum().backward()
        for name, parameter in module.named_parameters():
            np.testing.assert_allclose(per_sample[name][i].detach().numpy(),
                                       parameter.grad.numpy(), rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------------------
# DataLoaderSequence.

def test_cpu_tensors_become_numpy_arrays_sharing_memory():
    batches = [(torch.randn(4, 3), torch.arange(4)), (torch.randn(2, 3), torch.arange(2))]
    sequence = DataLoaderSequence(batches)
    assert len(sequence) == 2
    x, y = sequence[0]
    assert isinstance(x, np.ndarray) and x.shape == (4, 3) and y.dtype == np.int64
    assert np.shares_memory(x, batches[0][0].numpy())
    assert sequence[1][0].shape == (2, 3)


def test_batches_follow_the_loader_and_restart_each_epoch():
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.arange(6.).reshape(6, 1), torch.arange(6)),
        batch_size=4)
    sequence = DataLoaderSequence(loader)
    assert len(sequence) == 2
    first = sequence[1]    # the index Keras asks for is not used: the loader's order is
    assert isinstance(first, tuple) and first[1].tolist() == [0, 1, 2, 3]
    assert sequence[0][1].tolist() == [4, 5]
    assert sequence[0][1].tolist() == [0, 1, 2, 3]   # past the end: a new pass
    sequence.on_epoch_end()
    assert sequence[0][1].tolist() == [0, 1, 2, 3]


def test_structures_inside_a_batch_are_kept():
    batch = ([torch.ones(2, 1), torch.zeros(2, 2)], {'out': torch.ones(2)}, np.ones(2))
    x, y, weights = DataLoaderSequence([batch])[0]
    assert isinstance(x, list) and all(isinstance(v, np.ndarray) for v in x)
    assert isinstance(y['out'], np.ndarray) and weights is batch[2]
    alone = DataLoaderSequence([torch.ones(3, 2)])[0]
    assert isinstance(alone, np.ndarray) and alone.shape == (3, 2)


def test_a_loader_without_length_is_refused():
    class Stream(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter(range(3))
    with pytest.raises(TypeError, match='steps_per_epoch'):
        DataLoaderSequence(torch.utils.data.DataLoader(Stream()))


@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA device')
def test_cuda_tensors_are_passed_through_as_tensors():
    x = torch.randn(4, 3, device='cuda')
    labels = torch.arange(4, device='cuda')
    got_x, got_y = DataLoaderSequence([(x, labels)])[0]
    assert got_x.data_ptr() == x.data_ptr()
    assert got_y.shape == (4, 1) and got_y.device.type == 'cuda'
