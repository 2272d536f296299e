"""Offline stand-ins for the files the corpora download: the URL a script fetches gives a
small synthetic file in the real one's format and layout (a CSV with the real columns, a
zip or tar.gz of the real directory tree, JPEGs, WAVs, a TFRecord file).

`content(url)` is the bytes served for `url` (http and https alike); `offline.py` serves
them to `urllib` (and so to `keras.utils.get_file`, pandas, numpy) and to `requests`, and
`shell.py` to the `curl`/`wget` of keras-io's shell cells. A URL without a stand-in raises
`KeyError`: the download fails at once.
"""
import functools
import io
import urllib.parse

import numpy as np

from . import media, tables
from .formats import gzip_bytes, tar_gz_bytes, zip_bytes

_TF_DATA = '//storage.googleapis.com/download.tensorflow.org/data/'
_TF_IMAGES = '//storage.googleapis.com/download.tensorflow.org/example_images/'
_UCI = '//archive.ics.uci.edu/ml/machine-learning-databases/'
_FORDA = '//raw.githubusercontent.com/hfawaz/cd-diagram/master/FordA/'
_NAB = '//raw.githubusercontent.com/numenta/NAB/master/data/'


def _text(function, *args):
    return lambda: function(*args).encode('utf-8')


def _npz(arrays):
    """An `.npz` file (bytes), written without time stamps."""
    files = {}
    for name, array in arrays.items():
        out = io.BytesIO()
        np.lib.format.write_array(out, np.asarray(array), allow_pickle=False)
        files[name + '.npy'] = out.getvalue()
    return zip_bytes(files)


def _mnist_npz():
    import synthetic_datasets
    (x_train, y_train), (x_test, y_test) = synthetic_datasets.load_mnist()
    return _npz(dict(x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test))


STANDINS = {
    '//storage.googleapis.com/tf-datasets/titanic/train.csv': _text(tables.titanic, 'train'),
    '//storage.googleapis.com/tf-datasets/titanic/eval.csv': _text(tables.titanic, 'eval'),
    _TF_DATA + 'abalone_train.csv': _text(tables.abalone),
    _UCI + '00492/Metro_Interstate_Traffic_Volume.csv.gz':
        lambda: gzip_bytes(tables.traffic_volume().encode('utf-8')),
    _UCI + '00417/fonts.zip':
        lambda: zip_bytes({name + '.csv': tables.font(name) for name in tables.FONT_NAMES}),
    _TF_DATA + 'heart.csv': _text(tables.heart),
    _TF_DATA + 'petfinder-mini.zip':
        lambda: zip_bytes({'petfinder-mini/petfinder-mini.csv': tables.petfinder()}),
    _TF_DATA + 'creditcard.csv': _text(tables.creditcard),
    _TF_DATA + 'creditcard.zip': lambda: zip_bytes({'creditcard.csv': tables.creditcard()}),
    '//storage.googleapis.com/tensorflow/tf-keras-datasets/jena_climate_2009_2016.csv.zip':
        lambda: zip_bytes({'jena_climate_2009_2016.csv': tables.jena_climate()}),
    _UCI + 'auto-mpg/auto-mpg.data': _text(tables.auto_mpg),
    _UCI + 'breast-cancer-wisconsin/wdbc.data': _text(tables.wdbc),
    _TF_DATA + 'ecg.csv': _text(tables.ecg),
    _TF_IMAGES + 'flower_photos.tgz': lambda: tar_gz_bytes(media.flower_photos()),
    _TF_IMAGES + '592px-Red_sunflower.jpg': lambda: media.jpeg('sunflower', 443, 592),
    _TF_IMAGES + '320px-Felis_catus-cat_on_snow.jpg': lambda: media.jpeg('cat', 213, 320),
    _TF_IMAGES + '194px-New_East_River_Bridge_from_Brooklyn_det.4a09796u.jpg':
        lambda: media.jpeg('bridge', 240, 194),
    '//imagen.research.google/main_gallery_images/'
    'a-photo-of-a-corgi-dog-riding-a-bike-in-times-square.jpg':
        lambda: media.jpeg('corgi', 256, 256),
    '//ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz':
        lambda: tar_gz_bytes(media.aclimdb()),
    '//storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz': _mnist_npz,
    _TF_DATA + 'mini_speech_commands.zip': lambda: zip_bytes(media.speech_commands()),
    _TF_DATA + 'fsns-20160927/testdata/fsns-00000-of-00001': media.fsns_records,
    _FORDA + 'FordA_TRAIN.tsv': _text(tables.forda, 'TRAIN'),
    _FORDA + 'FordA_TEST.tsv': _text(tables.forda, 'TEST'),
    _NAB + 'artificialNoAnomaly/art_daily_small_noise.csv': _text(tables.nab_daily, False),
    _NAB + 'artificialWithAnomaly/art_daily_jumpsup.csv': _text(tables.nab_daily, True),
    '//download.microsoft.com/download/3/E/1/3E1C3F21-ECDB-4869-8368-6DEBA77B919F/'
    'kagglecatsanddogs_5340.zip': lambda: zip_bytes(media.cats_and_dogs()),
    '//github.com/AakashKumarNain/CaptchaCracker/raw/master/captcha_images_v2.zip':
        lambda: zip_bytes(media.captcha_images()),
    '//files.grouplens.org/datasets/movielens/ml-latest-small.zip':
        lambda: zip_bytes(tables.movielens_small()),
    _TF_DATA + 'spa-eng.zip': lambda: zip_bytes({
        'spa-eng/_about.txt': 'Stand-in sentence pairs (tab-separated).\n',
        'spa-eng/spa.txt': media.sentence_pairs()}),
    '//github.com/soumik12345/multi-label-text-classification/releases/download/v0.2/'
    'arxiv_data.csv': _text(tables.arxiv),
}
STANDINS.update({_TF_DATA + 'illiad/%s.txt' % name: _text(media.iliad, name)
                 for name in media.ILIAD_TRANSLATORS})


def _key(url):
    parts = urllib.parse.urlsplit(url)
    return '//%s%s' % (parts.netloc, parts.path)


def has(url):
    """Whether `url` has a stand-in."""
    return _key(url) in STANDINS


@functools.lru_cache(maxsize=None)
def content(url):
    """The stand-in's bytes for `url` (its scheme and query ignored).

    # Raises
        KeyError: if `url` has no stand-in.
    """
    key = _key(url)
    if key not in STANDINS:
        raise KeyError('No offline stand-in for %s.' % url)
    return STANDINS[key]()
