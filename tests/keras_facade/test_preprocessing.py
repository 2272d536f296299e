"""torchk.keras.preprocessing: image_dataset_from_directory (a torchk.tf Dataset); the
facade's module paths for the preprocessing layers and applications."""
import numpy as np
import pytest
from PIL import Image

import torchk.keras as keras


@pytest.fixture
def image_tree(tmp_path):
    """6 red and 4 blue 10x8 PNG images under cats/ and dogs/."""
    for name, count, color in (('cats', 6, (255, 0, 0)), ('dogs', 4, (0, 0, 255))):
        (tmp_path / name).mkdir()
        for i in range(count):
            Image.new('RGB', (10, 8), color).save(str(tmp_path / name / ('%d.png' % i)))
    (tmp_path / 'cats' / 'notes.txt').write_text('not an image')
    return tmp_path


def collect(dataset):
    images, labels = zip(*[(x.numpy(), y.numpy()) for x, y in dataset])
    return np.concatenate(images), np.concatenate(labels)


def test_images_and_inferred_labels(image_tree):
    dataset = keras.preprocessing.image_dataset_from_directory(
        str(image_tree), image_size=(4, 5), batch_size=3, seed=1)
    assert dataset.class_names == ['cats', 'dogs']
    images, labels = collect(dataset)
    assert images.shape == (10, 4, 5, 3) and images.dtype == np.float32
    assert sorted(labels.tolist()) == [0] * 6 + [1] * 4
    # Red images are cats (0), blue ones dogs (1).
    np.testing.assert_array_equal(images[:, 0, 0, 2] > 0, labels == 1)


def test_validation_split_and_label_modes(image_tree):
    def split(subset):
        return keras.utils.image_dataset_from_directory(
            str(image_tree), image_size=(4, 4), label_mode='categorical', seed=3,
            validation_split=0.3, subset=subset, color_mode='grayscale')
    training, validation = split('training'), split('validation')
    assert sorted(training.file_paths + validation.file_paths) == sorted(
        str(p) for p in image_tree.glob('*/*.png'))
    images, labels = collect(validation)
    assert images.shape == (3, 4, 4, 1) and labels.shape == (3, 2)
    with pytest.raises(ValueError, match='subset'):
        keras.preprocessing.image_dataset_from_directory(str(image_tree), subset='training')


def test_fit_on_the_dataset(image_tree):
    dataset = keras.preprocessing.image_dataset_from_directory(
        str(image_tree), image_size=(4, 4), batch_size=4, label_mode='binary', seed=0)
    model = keras.Sequential([
        keras.layers.experimental.preprocessing.Rescaling(1. / 255, input_shape=(4, 4, 3)),
        keras.layers.GlobalAveragePooling2D(),
        keras.layers.Dense(1, activation='sigmoid')])
    model.compile(keras.optimizers.Adam(0.3), 'binary_crossentropy', metrics=['accuracy'])
    model.fit(dataset, epochs=6, verbose=0)
    assert model.evaluate(dataset, verbose=0)[1] == 1.


def test_applications_and_their_modules():
    from torchk.keras.applications import mobilenet_v2
    assert keras.applications.MobileNetV2 is keras.applications.mobilenet_v2.MobileNetV2
    scaled = mobilenet_v2.preprocess_input(np.full((1, 2, 2, 3), 255., dtype='float32'))
    np.testing.assert_allclose(scaled, 1.)
