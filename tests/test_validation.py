import pytest

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
