import numpy as np
import pytest
import torch

from torchk import core as K
from torchk import validation
from torchk import variables


@pytest.mark.parametrize('actual, expected', [((2, 3), (2, 4)), ((2, 3), (None,)),
                                              ((2,), (2, 3))])
def test_check_shape_names_op_argument_and_shapes(actual, expected):
    with pytest.raises(ValueError) as error:
        validation.check_shape('lstm', 'initial state h', actual, expected)
    message = str(error.value)
    assert message.startswith('lstm: initial state h must have shape ')
    assert validation.format_shape(actual) in message
    assert validation.format_shape(expected) in message


@pytest.mark.parametrize('actual, expected', [((2, 3), (None, 3)), ((5,), (5,)), ((), ())])
def test_check_shape_accepts_matching_shapes(actual, expected):
    validation.check_shape('op', 'x', actual, expected)


def test_failure_names_the_layer_being_built():
    with variables.name_scope('lstm_1'):
        with pytest.raises(ValueError, match=r"^rnn \(in layer 'lstm_1'\): bad$"):
            validation.fail('rnn', 'bad')


def test_format_shape():
    assert validation.format_shape((None, 3)) == '(None, 3)'
    assert validation.format_shape((5,)) == '(5,)'
    assert validation.format_shape(()) == '()'


def test_check_index_range_skips_meta_tensors():
    validation.check_index_range('gather', 'indices', torch.empty(3, device='meta'), 1)


@pytest.mark.parametrize('bad', [3, -1])
def test_gather_rejects_indices_out_of_range_eagerly(bad):
    with pytest.raises(ValueError, match=r'^gather: indices must lie in \[0, 3\), got %d\.$'
                       % bad):
        K.gather(torch.zeros(3, 2), [0, bad])


def test_gather_rejects_indices_out_of_range_through_function():
    indices = K.placeholder((None,), dtype='int32')
    reference = K.variable(np.arange(6.).reshape(3, 2))
    f = K.function([indices], [K.gather(reference, indices)])
    np.testing.assert_array_equal(f([np.array([2, 0])])[0], [[4., 5.], [0., 1.]])
    with pytest.raises(ValueError, match=r'gather: indices must lie in \[0, 3\), got 7'):
        f([np.array([7])])


def test_embedding_error_names_the_layer():
    with variables.name_scope('embedding_1'):
        with pytest.raises(ValueError, match=r"^gather \(in layer 'embedding_1'\): indices"):
            K.gather(torch.zeros(4, 2), torch.tensor([[1, 4]]))


def test_sparse_categorical_crossentropy_rejects_labels_out_of_range():
    with pytest.raises(ValueError, match=r'^sparse_categorical_crossentropy: target must lie '
                                         r'in \[0, 3\), got 5\.$'):
        K.sparse_categorical_crossentropy(torch.tensor([[1.], [5.]]), torch.ones(2, 3) / 3)


@pytest.mark.parametrize('call, message', [
    (lambda: K.conv2d(torch.zeros(1, 3, 3, 2), torch.zeros(5, 5, 2, 1)),
     r"^conv2d: with padding 'valid', the kernel window \(5, 5\) \(dilated\) must fit in the "
     r"input's spatial shape \(3, 3\)\.$"),
    (lambda: K.conv1d(torch.zeros(1, 5, 2), torch.zeros(2, 2, 1), dilation_rate=5),
     r'^conv1d: .* kernel window \(6,\) .* spatial shape \(5,\)'),
    (lambda: K.depthwise_conv2d(torch.zeros(1, 3, 3, 2), torch.zeros(4, 1, 2, 1)),
     r'^depthwise_conv2d: .* depthwise_kernel window \(4, 1\) .* spatial shape \(3, 3\)'),
    (lambda: K.pool2d(torch.zeros(1, 3, 3, 2), (5, 5)),
     r'^pool2d: .* pool_size window \(5, 5\) .* spatial shape \(3, 3\)'),
    (lambda: K.local_conv1d(torch.zeros(1, 3, 2), torch.zeros(1, 10, 1), (5,), (1,)),
     r'^local_conv1d: .* kernel_size window \(5,\) .* spatial shape \(3,\)'),
    (lambda: K.conv2d(K.placeholder((None, 3, 3, 2)), torch.zeros(5, 5, 2, 1)),
     r'^conv2d: .* kernel window \(5, 5\)'),
])
def test_valid_windows_must_fit_the_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize('padding', ['same', 'causal'])
def test_padded_windows_larger_than_the_input_are_fine(padding):
    y = K.conv1d(torch.ones(1, 3, 1), torch.ones(5, 1, 1), padding=padding)
    assert tuple(y.shape) == (1, 3, 1)
