"""torchk.applications' builders refuse what tf.keras' refuse, with errors naming the
argument; the shapes and heads their arguments ask for."""
import numpy as np
import pytest

from keras import layers

import torchk.applications as applications


@pytest.mark.parametrize('build, message', [
    (lambda: applications.EfficientNetB0(weights='/no/such/file.h5'),
     r"`weights` argument should be None .*'imagenet'.*got weights='/no/such/file.h5'"),
    (lambda: applications.ConvNeXtTiny(weights='imagenet', classes=10),
     r"weights='imagenet' and include_top=True, `classes` should be 1000 .*got classes=10"),
    (lambda: applications.ResNetRS50(weights='imagenet-i224'),
     r"'imagenet-i160'.*got weights='imagenet-i224'"),
    (lambda: applications.EfficientNetV2B0(weights=None, input_shape=(16, 16, 3),
                                           include_top=False),
     'Input size must be at least 32x32'),
    (lambda: applications.MobileNetV3Small(weights=None, input_shape=(24, 64, 3)),
     r'Input size must be at least 32x32; got input_shape=\(24, 64, 3\)'),
    (lambda: applications.MobileNetV3Large(weights='imagenet', alpha=0.5),
     r'alpha=0.75 and 1.0 .*got alpha=0.5'),
    (lambda: applications.MobileNetV3Small(input_tensor=np.zeros((1, 32, 32, 3))),
     '`input_tensor` should be a Keras tensor'),
    (lambda: applications.EfficientNetB0(weights=None, include_top=True,
                                         input_shape=(None, None, 3)),
     'you should specify a static `input_shape`'),
    (lambda: applications.efficientnet_v2.EfficientNetV2(1.0, 1.0, 224, weights=None,
                                                         model_name='efficientnetv2-x'),
     r"`model_name` should end in .*got model_name='efficientnetv2-x'"),
    (lambda: applications.regnet.RegNet((1, 1, 1, 1), (8, 8, 8, 8), 8, 'Z', 224, weights=None),
     r"`block_type` should be 'X' or 'Y'; got 'Z'"),
])
def test_refused_arguments(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_pretrained_weights_take_only_softmax_or_linear_classifiers(tmp_path):
    path = str(tmp_path / 'weights.h5')
    applications.RegNetX002(weights=None, input_shape=(32, 32, 3), classes=4).save_weights(path)
    with pytest.raises(ValueError, match="classifier_activation='sigmoid'"):
        applications.RegNetX002(weights=path, input_shape=(32, 32, 3), classes=4,
                                classifier_activation='sigmoid')


@pytest.mark.parametrize('build, output_shape', [
    (lambda: applications.MobileNetV3Small(weights=None, include_top=False, pooling='max',
                                           input_shape=(64, 48, 3)), (None, 576)),
    (lambda: applications.MobileNetV3Small(weights=None, include_top=False,
                                           input_shape=(64, 48, 3)), (None, 2, 2, 576)),
    (lambda: applications.EfficientNetV2B1(weights=None, include_top=False,
                                           input_shape=(64, 64, 1)), (None, 2, 2, 1280)),
    (lambda: applications.ConvNeXtTiny(weights=None, include_top=False,
                                       input_shape=(64, 64, 3)), (None, 2, 2, 768)),
    (lambda: applications.ResNetRS50(weights=None, classes=7, input_shape=(64, 64, 3),
                                     include_preprocessing=False), (None, 7)),
])
def test_output_shapes(build, output_shape):
    assert build().output_shape == output_shape


def test_classifier_activation_and_regnet_logits():
    image = np.random.RandomState(0).uniform(0, 255, (2, 32, 32, 3)).astype('float32')
    softmax = applications.EfficientNetB0(weights=None, input_shape=(32, 32, 3), classes=5)
    np.testing.assert_allclose(softmax.predict(image).sum(axis=1), 1., rtol=1e-5)
    # tf.keras 2.15's RegNet classifier returns logits whatever `classifier_activation` says.
    regnet = applications.RegNetY002(weights=None, input_shape=(32, 32, 3), classes=5)
    assert regnet.layers[-1].get_config()['activation'] == 'linear'


def test_input_tensor_from_another_layer_starts_convnext_at_its_keras_input():
    image = layers.Input((32, 32, 3))
    scaled = layers.Lambda(lambda x: x * 2.)(image)
    model = applications.ConvNeXtTiny(weights=None, input_tensor=scaled, classes=3)
    assert model.inputs == [image]
    assert 'lambda' not in [layer.name.split('_')[0] for layer in model.layers]
