"""Offline stand-ins for `keras.datasets`: small, learnable synthetic data of the real formats.

Each loader returns what tf.keras 2's returns (array shapes per sample, dtypes, label ranges,
the split into train and test) and honours the same arguments (`num_words`, `skip_top`,
`maxlen`, `seed`, `start_char`, `oov_char`, `index_from`, `test_split`, `label_mode`). The
samples are drawn from a fixed generator (never numpy's global one, which scripts seed), so
both sides of the canon runner see the same data. Classes are learnable: every image class
has its own pattern under the noise, every text class its own marker words.

Sample counts: `KERAS_IO_DATA=small` (the default) gives `SMALL` counts so that a script's
epochs take seconds; `KERAS_IO_DATA=real` gives the real data sets' counts, for scripts that
hard-code them (`x_train.reshape(60000, 784)`, `x_train[-10000:]`).

`install()` puts these loaders in place of `load_data` (and `get_word_index`,
`get_label_names`) in every loaded `*.datasets.<name>` module: tf_keras', Keras 2.3.1's and
torchk.keras' alike.
"""
import os
import sys

import numpy as np

# (train, test) sample counts; reuters and boston_housing are split by `test_split`, so
# they have one total count.
REAL = dict(mnist=(60000, 10000), fashion_mnist=(60000, 10000), cifar10=(50000, 10000),
            cifar100=(50000, 10000), imdb=(25000, 25000), reuters=11228, boston_housing=506)
SMALL = dict(mnist=(1000, 200), fashion_mnist=(1000, 200), cifar10=(1000, 200),
             cifar100=(1000, 200), imdb=(1000, 250), reuters=1250, boston_housing=506)
IMDB_VOCABULARY = 88584
REUTERS_VOCABULARY = 30979
REUTERS_CLASSES = 46
_MARKERS_PER_CLASS = 8  # marker words per text class, among the frequent ranks
_FIRST_MARKER = 20


def _counts(name):
    mode = os.environ.get('KERAS_IO_DATA', 'small')
    if mode not in ('small', 'real'):
        raise ValueError('KERAS_IO_DATA must be "small" or "real", got %r.' % mode)
    return (SMALL if mode == 'small' else REAL)[name]


def _generator(name):
    return np.random.default_rng(sum(map(ord, name)))


def _balanced_labels(rng, count, classes):
    """`count` labels in [0, classes), every class present when count >= classes."""
    return rng.permutation(np.arange(count) % classes)


def _images(rng, labels, shape, classes):
    """uint8 images: a smooth pattern per class (drawn coarse, upsampled 4x, up to 165)
    plus uniform noise (up to 89)."""
    coarse = rng.integers(0, 166, (classes,) + (shape[0] // 4, shape[1] // 4) + shape[2:],
                          dtype=np.uint8)
    patterns = coarse.repeat(4, axis=1).repeat(4, axis=2)
    noise = rng.integers(0, 90, (len(labels),) + shape, dtype=np.uint8)
    return patterns[labels] + noise


def _image_data(name, shape, classes, label_shape=(), label_dtype='uint8', variant=''):
    train_count, test_count = _counts(name)
    rng = _generator(name + variant)
    labels = _balanced_labels(rng, train_count + test_count, classes)
    images = _images(rng, labels, shape, classes)
    labels = labels.astype(label_dtype).reshape((-1,) + label_shape)
    return ((images[:train_count], labels[:train_count]),
            (images[train_count:], labels[train_count:]))


def load_mnist(path='mnist.npz'):
    """`keras.datasets.mnist.load_data`: uint8 images (28, 28), uint8 labels 0-9."""
    return _image_data('mnist', (28, 28), 10)


def load_fashion_mnist():
    """`keras.datasets.fashion_mnist.load_data`: as mnist's."""
    return _image_data('fashion_mnist', (28, 28), 10)


def load_cifar10():
    """`keras.datasets.cifar10.load_data`: uint8 images (32, 32, 3), uint8 labels (N, 1)."""
    return _image_data('cifar10', (32, 32, 3), 10, label_shape=(1,))


def load_cifar100(label_mode='fine'):
    """`keras.datasets.cifar100.load_data`: int64 labels (N, 1) of 100 fine or 20 coarse
    classes."""
    if label_mode not in ('fine', 'coarse'):
        raise ValueError('`label_mode` must be one of `"fine"`, `"coarse"`. '
                         'Received: label_mode=%s.' % label_mode)
    classes = 100 if label_mode == 'fine' else 20
    return _image_data('cifar100', (32, 32, 3), classes, label_shape=(1,),
                       label_dtype='int64', variant=label_mode)


def _documents(rng, labels, vocabulary, lengths):
    """Lists of word ranks (1 = most frequent): Zipf-distributed words, one in eight replaced
    by one of the marker words of the document's class."""
    ranks = np.arange(1, vocabulary + 1)
    frequencies = 1.0 / ranks
    words = rng.choice(ranks, size=lengths.sum(), p=frequencies / frequencies.sum())
    owners = np.repeat(labels, lengths)
    markers = _FIRST_MARKER + owners * _MARKERS_PER_CLASS + rng.integers(
        0, _MARKERS_PER_CLASS, size=len(words))
    words = np.where(rng.uniform(size=len(words)) < 0.125, markers, words)
    return [d.tolist() for d in np.split(words, np.cumsum(lengths)[:-1])]


def _index_words(documents, num_words, skip_top, maxlen, start_char, oov_char, index_from,
                 labels):
    """tf.keras' indexing of word ranks: shift by `index_from`, prepend `start_char`, drop
    sequences of `maxlen` words or more, replace (or drop, when `oov_char` is None) words
    outside [skip_top, num_words)."""
    if start_char is not None:
        documents = [[start_char] + [w + index_from for w in d] for d in documents]
    elif index_from:
        documents = [[w + index_from for w in d] for d in documents]
    if maxlen:
        kept = [i for i, d in enumerate(documents) if len(d) < maxlen]
        documents = [documents[i] for i in kept]
        labels = labels[kept]
        if not documents:
            raise ValueError('After filtering for sequences shorter than maxlen=%s, no '
                             'sequence was kept. Increase maxlen.' % maxlen)
    if not num_words:
        num_words = max(max(d) for d in documents)
    if oov_char is not None:
        documents = [[w if skip_top <= w < num_words else oov_char for w in d]
                     for d in documents]
    else:
        documents = [[w for w in d if skip_top <= w < num_words] for d in documents]
    return documents, labels


def _object_array(documents):
    array = np.empty(len(documents), dtype=object)
    array[:] = documents
    return array


def load_imdb(path='imdb.npz', num_words=None, skip_top=0, maxlen=None, seed=113,
              start_char=1, oov_char=2, index_from=3, **kwargs):
    """`keras.datasets.imdb.load_data`: object arrays of word-index lists (lengths 10-500),
    int64 labels 0/1; train and test each shuffled with `seed`."""
    if kwargs:
        raise TypeError('Unrecognized keyword arguments: %s.' % kwargs)
    train_count, test_count = _counts('imdb')
    rng = _generator('imdb')
    labels = _balanced_labels(rng, train_count + test_count, 2).astype('int64')
    documents = _documents(rng, labels, IMDB_VOCABULARY,
                           rng.integers(10, 500, size=len(labels)))
    splits = []
    for part, shuffle_seed in ((slice(0, train_count), seed), (slice(train_count, None),
                                                                seed * 2)):
        order = np.random.RandomState(shuffle_seed).permutation(len(labels[part]))
        part_documents = [documents[part][i] for i in order]
        part_labels = labels[part][order]
        part_documents, part_labels = _index_words(part_documents, num_words, skip_top,
                                                   maxlen, start_char, oov_char,
                                                   index_from, part_labels)
        splits.append((_object_array(part_documents), part_labels))
    return tuple(splits)


def load_reuters(path='reuters.npz', num_words=None, skip_top=0, maxlen=None,
                 test_split=0.2, seed=113, start_char=1, oov_char=2, index_from=3, **kwargs):
    """`keras.datasets.reuters.load_data`: object arrays of word-index lists (lengths 10-300),
    int64 labels of 46 topics; shuffled with `seed`, the last `test_split` for testing."""
    if kwargs:
        raise TypeError('Unrecognized keyword arguments: %s.' % kwargs)
    rng = _generator('reuters')
    labels = _balanced_labels(rng, _counts('reuters'), REUTERS_CLASSES).astype('int64')
    documents = _documents(rng, labels, REUTERS_VOCABULARY,
                           rng.integers(10, 300, size=len(labels)))
    order = np.random.RandomState(seed).permutation(len(labels))
    documents, labels = _index_words([documents[i] for i in order], num_words, skip_top,
                                     maxlen, start_char, oov_char, index_from, labels[order])
    split = int(len(documents) * (1 - test_split))
    return ((_object_array(documents[:split]), labels[:split]),
            (_object_array(documents[split:]), labels[split:]))


def _word_index(vocabulary):
    """{word: rank}, rank 1 the most frequent, for made-up words `w1`, `w2`, ..."""
    return {'w%d' % rank: rank for rank in range(1, vocabulary + 1)}


def imdb_word_index(path='imdb_word_index.json'):
    """`keras.datasets.imdb.get_word_index`."""
    return _word_index(IMDB_VOCABULARY)


def reuters_word_index(path='reuters_word_index.json'):
    """`keras.datasets.reuters.get_word_index`."""
    return _word_index(REUTERS_VOCABULARY)


def reuters_label_names():
    """`keras.datasets.reuters.get_label_names`: the 46 topic names."""
    return tuple('topic%d' % i for i in range(REUTERS_CLASSES))


def load_boston_housing(path='boston_housing.npz', test_split=0.2, seed=113):
    """`keras.datasets.boston_housing.load_data`: float64 features (13,), float64 prices
    (5-50, linear in the features plus noise); shuffled with `seed`."""
    if not 0 <= test_split < 1:
        raise ValueError('test_split must be between 0 and 1. Received: %s' % test_split)
    rng = _generator('boston_housing')
    count = _counts('boston_housing')
    features = rng.uniform(0, 1, (count, 13)) * rng.uniform(1, 100, 13)
    weights = rng.normal(0, 1, 13) / features.std(axis=0)
    prices = features @ weights
    prices = 5 + 45 * (prices - prices.min()) / (prices.max() - prices.min())
    prices = np.clip(prices + rng.normal(0, 1, count), 5, 50)
    order = np.random.RandomState(seed).permutation(count)
    features, prices = features[order], prices[order]
    split = int(count * (1 - test_split))
    return (features[:split], prices[:split]), (features[split:], prices[split:])


LOADERS = dict(mnist=dict(load_data=load_mnist),
               fashion_mnist=dict(load_data=load_fashion_mnist),
               cifar10=dict(load_data=load_cifar10),
               cifar100=dict(load_data=load_cifar100),
               imdb=dict(load_data=load_imdb, get_word_index=imdb_word_index),
               reuters=dict(load_data=load_reuters, get_word_index=reuters_word_index,
                            get_label_names=reuters_label_names),
               boston_housing=dict(load_data=load_boston_housing))


def install():
    """Replaces the loaders of every `*.datasets.<name>` module loaded now.

    # Returns
        The names of the modules patched.
    """
    patched = []
    for module_name, module in list(sys.modules.items()):
        parts = module_name.rsplit('.', 2)
        if len(parts) == 3 and parts[1] == 'datasets' and parts[2] in LOADERS and hasattr(
                module, 'load_data'):
            for attribute, loader in LOADERS[parts[2]].items():
                setattr(module, attribute, loader)
            patched.append(module_name)
    return patched
