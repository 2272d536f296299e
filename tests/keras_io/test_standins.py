"""The corpora's offline stand-ins (tests/keras_io/standins, offline.py, shell.py): files in
the real formats and layouts, which the real readers accept where the scripts read them."""
import csv
import datetime
import io
import json
import os
import socket
import struct
import subprocess
import sys
import urllib.error
import urllib.request
import wave

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import offline  # noqa: E402
import selection  # noqa: E402
import shell  # noqa: E402
import standins  # noqa: E402
from standins import formats, media  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(HERE), 'fixtures', 'tf_records')
TF_DATA = 'https://storage.googleapis.com/download.tensorflow.org/data/'


@pytest.fixture
def served(monkeypatch):
    """This process offline with the stand-ins served, put back after the test."""
    monkeypatch.setattr(urllib.request, '_opener', None)
    monkeypatch.setattr(socket.socket, 'connect', socket.socket.connect)
    offline.install()


@pytest.fixture
def get_file(served):
    """tf.keras' `get_file` as torchk serves it."""
    from torchk.keras import utils
    return utils.get_file


def _rows(path_or_text, delimiter=','):
    text = open(path_or_text).read() if os.path.exists(path_or_text) else path_or_text
    return list(csv.reader(io.StringIO(text), delimiter=delimiter))


def test_urlopen_serves_stand_ins_and_fails_at_once_without_one(served):
    with urllib.request.urlopen(TF_DATA + 'heart.csv') as response:
        header = response.read().decode('utf-8').splitlines()[0]
    assert header.split(',')[-2:] == ['thal', 'target']
    with pytest.raises(urllib.error.URLError, match='No offline stand-in'):
        urllib.request.urlopen('https://example.com/data.csv')
    with pytest.raises(OSError, match='offline'):
        socket.create_connection(('127.0.0.1', 9))


def test_http_and_https_get_the_same_stand_in():
    assert standins.content('http://storage.googleapis.com/tf-datasets/titanic/train.csv') \
        == standins.content('https://storage.googleapis.com/tf-datasets/titanic/train.csv')


def test_titanic_csv_read_through_get_file(get_file, tmp_path):
    path = get_file('train.csv', 'https://storage.googleapis.com/tf-datasets/titanic/train.csv',
                    cache_dir=str(tmp_path))
    rows = _rows(path)
    assert rows[0] == ['survived', 'sex', 'age', 'n_siblings_spouses', 'parch', 'fare',
                       'class', 'deck', 'embark_town', 'alone']
    assert len(rows) == 628
    assert {r[0] for r in rows[1:]} == {'0', '1'}
    assert {r[6] for r in rows[1:]} == {'First', 'Second', 'Third'}


def test_petfinder_zip_extracts_to_the_tutorials_path(get_file, tmp_path):
    get_file('petfinder_mini.zip', TF_DATA + 'petfinder-mini.zip', extract=True,
             cache_dir=str(tmp_path))
    rows = _rows(str(tmp_path / 'datasets' / 'petfinder-mini' / 'petfinder-mini.csv'))
    assert rows[0][0] == 'Type' and rows[0][-1] == 'AdoptionSpeed'
    assert {r[-1] for r in rows[1:]} == {'0', '1', '2', '3', '4'}


def test_jena_climate_zip_holds_ten_minute_records(get_file, tmp_path):
    zip_path = get_file(origin='https://storage.googleapis.com/tensorflow/tf-keras-datasets/'
                        'jena_climate_2009_2016.csv.zip', fname='jena_climate_2009_2016.csv.zip',
                        extract=True, cache_dir=str(tmp_path))
    rows = _rows(os.path.splitext(zip_path)[0])
    assert rows[0][:3] == ['Date Time', 'p (mbar)', 'T (degC)'] and len(rows[0]) == 15
    times = [datetime.datetime.strptime(r[0], '%d.%m.%Y %H:%M:%S') for r in rows[1:4]]
    assert times[1] - times[0] == datetime.timedelta(minutes=10) == times[2] - times[1]
    assert sum(r[12] == '-9999.00' for r in rows[1:]) == 3


def test_aclimdb_untars_to_the_tree_the_tutorial_reads(get_file, tmp_path):
    dataset = get_file('aclImdb_v1', 'https://ai.stanford.edu/~amaas/data/sentiment/'
                       'aclImdb_v1.tar.gz', untar=True, cache_dir=str(tmp_path), cache_subdir='')
    root = os.path.join(os.path.dirname(dataset), 'aclImdb')
    assert sorted(os.listdir(os.path.join(root, 'train'))) == [
        'labeledBow.feat', 'neg', 'pos', 'unsup', 'unsupBow.feat', 'urls_neg.txt',
        'urls_pos.txt', 'urls_unsup.txt']
    for split in ('train', 'test'):
        for sentiment in ('pos', 'neg'):
            assert len(os.listdir(os.path.join(root, split, sentiment))) == 250
    assert open(os.path.join(root, 'train', 'pos', '1181_9.txt')).read()


def test_speech_commands_zip_holds_16khz_mono_wavs(get_file, tmp_path):
    get_file('mini_speech_commands.zip', origin='http://storage.googleapis.com/'
             'download.tensorflow.org/data/mini_speech_commands.zip', extract=True,
             cache_dir=str(tmp_path), cache_subdir='data')
    root = tmp_path / 'data' / 'mini_speech_commands'
    assert sorted(os.listdir(root)) == ['README.md'] + sorted(media.SPEECH_COMMANDS)
    with wave.open(str(root / 'no' / '01bb6a2a_nohash_0.wav')) as reader:
        assert (reader.getnchannels(), reader.getsampwidth(), reader.getframerate()) == (
            1, 2, 16000)
        assert 12800 <= reader.getnframes() <= 16000


def test_mnist_npz_has_the_arrays_of_keras_datasets(get_file, tmp_path):
    path = get_file('mnist.npz', 'https://storage.googleapis.com/tensorflow/tf-keras-datasets/'
                    'mnist.npz', cache_dir=str(tmp_path))
    with np.load(path) as data:
        assert data['x_train'].shape[1:] == (28, 28) and data['x_train'].dtype == np.uint8
        assert set(np.unique(data['y_test'])) == set(range(10))


def test_auto_mpg_has_six_missing_horsepowers_and_a_tab_before_the_name():
    lines = standins.content('http://archive.ics.uci.edu/ml/machine-learning-databases/'
                             'auto-mpg/auto-mpg.data').decode('utf-8').splitlines()
    assert len(lines) == 398
    fields = [line.split('\t')[0].split() for line in lines]
    assert {len(f) for f in fields} == {8}
    assert sum(f[3] == '?' for f in fields) == 6


def test_forda_tsv_is_read_by_numpy_loadtxt_from_its_url(served, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # numpy keeps a copy of what it fetches in the directory
    data = np.loadtxt('https://raw.githubusercontent.com/hfawaz/cd-diagram/master/FordA/'
                      'FordA_TEST.tsv', delimiter='\t')
    assert data.shape == (200, 501)
    assert set(data[:, 0]) == {-1.0, 1.0}


def test_crc32c_check_value():
    assert formats.crc32c(b'123456789') == 0xE3069283


def test_tfrecord_of_examples_matches_tensorflows_writer():
    with open(os.path.join(FIXTURES, 'examples.json')) as f:
        described = json.load(f)
    examples = [formats.example_bytes({e['name']: [bytes.fromhex(v) for v in e['values']]
                                       if e['kind'] == 'bytes' else e['values']})
                for e in described]
    with open(os.path.join(FIXTURES, 'examples.tfrecord'), 'rb') as f:
        assert formats.tfrecord_bytes(examples) == f.read()


def _tfrecord_records(data):
    records, offset = [], 0
    while offset < len(data):
        length, = struct.unpack('<Q', data[offset:offset + 8])
        records.append(data[offset + 12:offset + 12 + length])
        offset += 12 + length + 4
    return records


def test_fsns_records_hold_png_images_and_texts():
    pytest.importorskip('PIL')
    records = _tfrecord_records(standins.content(
        TF_DATA + 'fsns-20160927/testdata/fsns-00000-of-00001'))
    assert len(records) == 10
    assert b'image/text' in records[0] and b'\x89PNG\r\n\x1a\n' in records[0]


def test_flower_photos_untar_to_class_folders_of_jpegs(get_file, tmp_path):
    image = pytest.importorskip('PIL.Image')
    root = get_file('flower_photos', 'https://storage.googleapis.com/download.tensorflow.org/'
                    'example_images/flower_photos.tgz', untar=True, cache_dir=str(tmp_path))
    assert sorted(os.listdir(root)) == ['LICENSE.txt'] + sorted(media.FLOWERS)
    roses = sorted(os.listdir(os.path.join(root, 'roses')))
    assert len(roses) == 40 and all(name.endswith('.jpg') for name in roses)
    path = os.path.join(root, 'roses', roses[0])
    assert b'JFIF' in open(path, 'rb').read(16)
    with image.open(path) as picture:
        assert picture.format == 'JPEG' and picture.mode == 'RGB'


@pytest.mark.parametrize('tool, args, expected', [
    ('curl', ['-O', 'https://host/a/b.zip'], ('https://host/a/b.zip', 'b.zip')),
    ('curl', ['-LO', 'https://host/c.tar.gz'], ('https://host/c.tar.gz', 'c.tar.gz')),
    ('curl', ['-s', '-o', 'out.csv', 'https://host/x.csv'], ('https://host/x.csv', 'out.csv')),
    ('curl', ['https://host/x.csv'], ('https://host/x.csv', None)),
    ('wget', ['-q', 'https://git.io/J0fjL', '-O', 'IAM.zip'], ('https://git.io/J0fjL',
                                                               'IAM.zip')),
    ('wget', ['https://host/d/e.txt'], ('https://host/d/e.txt', 'e.txt')),
])
def test_fetch_command_lines(tool, args, expected):
    assert shell._fetch_options(tool, args) == expected


def test_shell_cells_fetch_and_unpack_offline(tmp_path):
    source = ('"""\nTitle\n"""\n"""shell\ncurl -O https://ai.stanford.edu/~amaas/data/'
              'sentiment/aclImdb_v1.tar.gz\ntar -xf aclImdb_v1.tar.gz\n"""\nx = 1\n'
              '"""shell\n!rm -r aclImdb/train/unsup\ncurl -O https://example.com/none.zip\n"""\n')
    cells = shell.shell_cells(source)
    assert cells[1] == 'rm -r aclImdb/train/unsup\ncurl -O https://example.com/none.zip\n'
    log = shell.run_cells(cells, str(tmp_path))
    assert sorted(os.listdir(tmp_path / 'aclImdb' / 'train')) == [
        'labeledBow.feat', 'neg', 'pos', 'unsupBow.feat', 'urls_neg.txt', 'urls_pos.txt',
        'urls_unsup.txt']
    assert 'No offline stand-in for https://example.com/none.zip' in log
    assert '(shell cell exit status 6)' in log


def test_every_url_of_the_served_keras_io_scripts_has_a_stand_in():
    missing = [url for urls in selection.SERVED.values() for url in urls
               if not standins.has(url)]
    assert missing == []


def test_a_served_script_with_a_fetching_shell_cell_is_run():
    source = ('"""\nTitle: OCR\n"""\n"""shell\ncurl -LO https://github.com/x/y.zip\n"""\n'
              'import numpy as np\n')
    assert selection.left_out_reason('examples/vision/captcha_ocr.py', source) is None
    assert selection.left_out_reason('examples/vision/other.py', source).startswith(
        'fetches its data in a shell cell')


def test_the_fetch_tool_runs_as_a_command(tmp_path):
    done = subprocess.run([sys.executable, shell.__file__, 'curl', '-o', 'heart.csv',
                           TF_DATA + 'heart.csv'], cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=HERE), capture_output=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / 'heart.csv').read_bytes() == standins.content(TF_DATA + 'heart.csv')
