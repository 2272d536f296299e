"""Images, sounds and texts of the stand-ins: the real files' formats and directory layouts,
few and small, each class with its own pattern (a colour and shape, a tone, marker words) so
that a model can learn them.

Each function returns {path: bytes or str}, the files as the real archive holds them (or the
bytes of one file). Everything comes from generators seeded by name.
"""
import numpy as np

from .formats import example_bytes, image_bytes, tfrecord_bytes, wav_bytes
from .tables import generator


def picture(rng, height, width, hue, shape='disc'):
    """uint8 (height, width, 3): a shape in colour `hue` (an RGB triple) on a noisy
    background."""
    y, x = np.mgrid[0:height, 0:width]
    cy, cx = rng.uniform(0.35, 0.65) * height, rng.uniform(0.35, 0.65) * width
    radius = rng.uniform(0.2, 0.35) * min(height, width)
    if shape == 'disc':
        inside = (y - cy) ** 2 + (x - cx) ** 2 < radius ** 2
    elif shape == 'square':
        inside = (abs(y - cy) < radius) & (abs(x - cx) < radius)
    elif shape == 'stripes':
        inside = ((x // max(2, int(radius / 3))) % 2) == 0
    elif shape == 'ring':
        distance = np.sqrt((y - cy) ** 2 + (x - cx) ** 2)
        inside = (distance < radius) & (distance > radius / 2)
    else:
        inside = abs((y - cy) - (x - cx)) < radius / 3
    background = rng.integers(0, 120, (height, width, 3))
    image = np.where(inside[..., None], np.asarray(hue)[None, None, :], background)
    return np.clip(image + rng.integers(-20, 20, (height, width, 3)), 0, 255).astype(np.uint8)


_SHAPES = ('disc', 'square', 'stripes', 'ring', 'diagonal')
_HUES = ((250, 240, 60), (230, 200, 40), (220, 30, 60), (250, 180, 0), (200, 60, 200),
         (40, 200, 80), (60, 120, 240), (240, 120, 30))


def jpeg(name, height, width, hue=(200, 120, 40)):
    """One JPEG file's bytes."""
    return image_bytes(picture(generator(name), height, width, hue), 'JPEG')


def image_folders(root, classes, per_class, size=(64, 64), name_format='%d.jpg',
                  extra=None):
    """Class folders of JPEG images, `root/<class>/<name>`, sizes varying around `size`.

    # Arguments
        root: the top directory inside the archive ('' for none).
        classes: the class folder names.
        per_class: images in each folder.
        size: (height, width) of the images, each varied by up to a quarter.
        name_format: the file name of the i-th image of a class.
        extra: more files, {path: bytes or str}.
    """
    files = {}
    for label, name in enumerate(classes):
        rng = generator(root + name)
        for i in range(per_class):
            height = int(size[0] * rng.uniform(0.8, 1.25))
            width = int(size[1] * rng.uniform(0.8, 1.25))
            pixels = picture(rng, height, width, _HUES[label % len(_HUES)],
                             _SHAPES[label % len(_SHAPES)])
            files['/'.join(p for p in (root, name, name_format % i) if p)] = image_bytes(
                pixels, 'JPEG')
    files.update(extra or {})
    return files


FLOWERS = ('daisy', 'dandelion', 'roses', 'sunflowers', 'tulips')


def flower_photos(per_class=40):
    """`flower_photos.tgz`'s tree: flower_photos/<flower>/<n>.jpg and LICENSE.txt."""
    return image_folders('flower_photos', FLOWERS, per_class, size=(72, 96),
                         name_format='%d_photo.jpg',
                         extra={'flower_photos/LICENSE.txt': 'Stand-in photos, no licence.\n'})


def cats_and_dogs(per_class=60):
    """`kagglecatsanddogs_5340.zip`'s tree: PetImages/Cat/<n>.jpg, PetImages/Dog/<n>.jpg
    (Cat/6779.jpg among them, as keras-io's example opens that one), two files that are not
    JPEGs (the real set has such broken files), and the archive's readme."""
    files = image_folders('PetImages', ('Cat', 'Dog'), per_class, size=(96, 128))
    files['PetImages/Cat/6779.jpg'] = image_bytes(
        picture(generator('cat6779'), 110, 120, _HUES[0], _SHAPES[0]), 'JPEG')
    files['PetImages/Cat/666.jpg'] = b''
    files['PetImages/Dog/11702.jpg'] = b'BM not a JPEG'
    files['readme[1].txt'] = 'Stand-in for the Kaggle cats and dogs images.\n'
    return files


CAPTCHA_CHARACTERS = '2345678bcdefgmnpwxy'


def captcha_images(count=120):
    """`captcha_images_v2.zip`'s tree: captcha_images_v2/<5 characters>.png, 200x50 RGBA
    PNGs, each character drawn as its own bar pattern in its slot."""
    rng = generator('captcha')
    files = {}
    while len(files) < count:
        text = ''.join(rng.choice(list(CAPTCHA_CHARACTERS), 5))
        image = np.full((50, 200, 4), 255, dtype=np.uint8)
        for slot, character in enumerate(text):
            code = CAPTCHA_CHARACTERS.index(character)
            left = 25 + slot * 30
            for bit in range(5):
                if code >> bit & 1:
                    image[8 + bit * 7:13 + bit * 7, left:left + 20, :3] = 40
            image[10:40, left + 21 + code % 3, :3] = 90
        noise = rng.integers(0, 30, (50, 200, 1))
        image[..., :3] = np.clip(image[..., :3].astype(int) - noise, 0, 255)
        files['captcha_images_v2/%s.png' % text] = image_bytes(image, 'PNG')
    return files


SPEECH_COMMANDS = ('down', 'go', 'left', 'no', 'right', 'stop', 'up', 'yes')


def speech_commands(per_class=80, rate=16000):
    """`mini_speech_commands.zip`'s tree: mini_speech_commands/<word>/<id>_nohash_<k>.wav
    (mono, 16-bit, 16 kHz, up to a second: a tone per word in noise) and README.md;
    `no/01bb6a2a_nohash_0.wav` among them, as the tutorial reads that one. 80 a word: TF's
    tutorial splits its validation set of 20 % in two by batches of 64."""
    files = {'mini_speech_commands/README.md': 'Stand-in speech commands: tones.\n'}
    for label, word in enumerate(SPEECH_COMMANDS):
        rng = generator('speech' + word)
        for i in range(per_class):
            speaker = '%08x' % rng.integers(2 ** 32)
            if (word, i) == ('no', 0):
                speaker = '01bb6a2a'
            length = int(rate * rng.uniform(0.8, 1.0))
            t = np.arange(length) / rate
            pitch = (300 + 250 * label) * rng.uniform(0.97, 1.03)
            envelope = np.exp(-((t - length / rate / 2) / 0.25) ** 2)
            samples = 0.5 * envelope * np.sin(2 * np.pi * pitch * t)
            samples += rng.normal(0, 0.05, length)
            files['mini_speech_commands/%s/%s_nohash_0.wav' % (word, speaker)] = wav_bytes(
                samples, rate)
    return files


_COMMON_WORDS = ('the a of and to in is it that was this film movie story plot actor scene '
                 'one time people really just even could would more most also very good bad '
                 'well character characters watch seen end some there about out what when '
                 'which who how life way much little man world director make made '
                 'first').split()
_SYLLABLES = ('ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'ti', 'vo', 'ze', 'po', 'da', 'fe', 'gu',
              'hi', 'jo')


def _made_up_words(count):
    """`count` distinct made-up words of two to four syllables."""
    words = []
    for i in range(count):
        parts, n = [], i + len(_SYLLABLES) ** 2
        while n:
            n, digit = divmod(n, len(_SYLLABLES))
            parts.append(_SYLLABLES[digit])
        words.append(''.join(parts))
    return words


# A vocabulary of 5000 words, ranked by frequency (Zipf's law): the tutorials index words
# by rank in the thousands (`vectorize_layer.get_vocabulary()[1287]`).
_WORDS = np.array(_COMMON_WORDS + _made_up_words(5000 - len(_COMMON_WORDS)), dtype=object)
_WORD_FREQUENCIES = 1.0 / np.arange(1, len(_WORDS) + 1)
_WORD_FREQUENCIES /= _WORD_FREQUENCIES.sum()
_REVIEW_MARKERS = {'pos': 'great wonderful excellent loved brilliant beautiful superb best '
                          'enjoyed perfect'.split(),
                   'neg': 'awful boring worst terrible waste poor dull horrible stupid '
                          'bad'.split()}


def review(rng, sentiment):
    """A made-up film review: words with this sentiment's markers among them, sentences
    broken with `<br /><br />` as IMDB's are."""
    count = int(rng.integers(40, 160))
    words = _WORDS[rng.choice(len(_WORDS), count, p=_WORD_FREQUENCIES)]
    if sentiment in _REVIEW_MARKERS:
        markers = np.array(_REVIEW_MARKERS[sentiment], dtype=object)
        chosen = rng.uniform(size=count) < 0.12
        words[chosen] = markers[rng.integers(0, len(markers), chosen.sum())]
    sentences = [' '.join(words[i:i + 12]).capitalize() + '.' for i in range(0, count, 12)]
    text = ' '.join(sentences)
    return text.replace('. ', '.<br /><br />', 1) if rng.uniform() < 0.5 else text


# Reviews that scripts open by name (TF's text_classification tutorial, keras-io's
# text_classification_from_scratch).
_READ_REVIEWS = ('1181_9.txt', '6248_7.txt')


def aclimdb(per_class=250, unsupervised=50):
    """`aclImdb_v1.tar.gz`'s tree: aclImdb/{train,test}/{pos,neg}/<id>_<rating>.txt,
    aclImdb/train/unsup/<id>_0.txt, and the archive's other files (README, imdb.vocab,
    imdbEr.txt, the bag-of-words and URL lists); `_READ_REVIEWS` among train/pos."""
    files = {'aclImdb/README': 'Stand-in for the Large Movie Review Dataset v1.0.\n',
             'aclImdb/imdb.vocab': '\n'.join(_WORDS) + '\n',
             'aclImdb/imdbEr.txt': '0.0\n' * len(_WORDS)}
    for split in ('train', 'test'):
        for sentiment in ('pos', 'neg'):
            rng = generator('aclimdb' + split + sentiment)
            for i in range(per_class):
                rating = rng.integers(7, 11) if sentiment == 'pos' else rng.integers(1, 5)
                name = '%d_%d.txt' % (2 * i + (sentiment == 'neg') + 20000 * (split == 'test'),
                                      rating)
                if (split, sentiment) == ('train', 'pos') and i < len(_READ_REVIEWS):
                    name = _READ_REVIEWS[i]
                files['aclImdb/%s/%s/%s' % (split, sentiment, name)] = review(rng, sentiment)
            files['aclImdb/%s/urls_%s.txt' % (split, sentiment)] = (
                'http://www.imdb.com/title/tt0000000/usercomments\n' * per_class)
        files['aclImdb/%s/labeledBow.feat' % split] = '0 0:1\n'
    rng = generator('aclimdb-unsup')
    for i in range(unsupervised):
        files['aclImdb/train/unsup/%d_0.txt' % i] = review(rng, 'unsup')
    files['aclImdb/train/unsupBow.feat'] = '0:1\n'
    files['aclImdb/train/urls_unsup.txt'] = ''
    return files


ILIAD_TRANSLATORS = ('cowper', 'derby', 'butler')


def iliad(translator, lines=300):
    """One translation of the Iliad (`illiad/<translator>.txt`): lines of verse, words drawn
    from a vocabulary of its own."""
    rng = generator('iliad' + translator)
    own = ['%s%d' % (translator[:3], i) for i in range(30)]
    common = 'achilles hector troy greeks wrath god ships war spear shield king son'.split()
    text = []
    for _ in range(lines):
        words = [str(rng.choice(own if rng.uniform() < 0.3 else common))
                 for _ in range(int(rng.integers(5, 11)))]
        text.append(' '.join(words).capitalize() + ',')
    return '\n'.join(text) + '\n'


def fsns_records(count=10):
    """The FSNS test TFRecord file: `tf.train.Example`s of a street-sign image (a PNG of four
    views side by side), its text and class ids."""
    rng = generator('fsns')
    records = []
    for i in range(count):
        text = 'Rue %s' % ''.join(rng.choice(list('abcdefghij'), 6))
        pixels = picture(rng, 75, 300, (240, 240, 240), 'square')
        records.append(example_bytes({
            'image/encoded': [image_bytes(pixels, 'PNG')], 'image/format': [b'PNG'],
            'image/text': [text.encode('utf-8')],
            'image/class': [int(ord(c)) % 134 for c in text],
            'image/unpadded_class': [int(ord(c)) % 134 for c in text],
            'image/width': [300], 'image/orig_width': [75], 'image/height': [75]}))
    return tfrecord_bytes(records)


def sentence_pairs(count=2000):
    """`spa-eng/spa.txt`: lines of an English sentence, a tab, its made-up Spanish
    translation (word by word, from a fixed dictionary)."""
    rng = generator('spa-eng')
    english = ('i you he she we they see want have like the a big small red green dog cat '
               'house car book friend today now here there very good').split()
    spanish = ('yo tu el ella nosotros ellos veo quiero tengo gusta el un grande pequeno rojo '
               'verde perro gato casa coche libro amigo hoy ahora aqui alli muy bueno').split()
    lines = []
    for _ in range(count):
        indices = rng.integers(0, len(english), int(rng.integers(2, 9)))
        source = ' '.join(english[i] for i in indices).capitalize() + '.'
        target = ' '.join(spanish[i] for i in indices).capitalize() + '.'
        lines.append('%s\t%s' % (source, target))
    return '\n'.join(lines) + '\n'
