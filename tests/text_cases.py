"""The text layer and `tf.strings` cases that tests/fixtures/make_tf_keras_text.py runs on
TensorFlow and tests/layers/test_text_fixtures.py on torchk: plain data only (the fixture
script imports it under TensorFlow), functions written against a `tf` module given to them.
"""
CORPUS = ['The cat sat on the mat.', 'The dog ate my homework!', 'Über café: naïve résumé',
          'Ça va? Très bien, merci.', '東京 is big; 東京 is busy', 'emoji 🙂 stays 🙂',
          'dog DOG Dog', "It's a dog's life", 'the end', 'the cat and the dog']
TEXTS = ['the cat ate', 'a brand new sentence', 'Über CAFÉ naïve', '🙂 東京', '',
         'dog? dog! dog.']
COLORS = ['red', 'green', 'red', 'blue', 'red', 'green', 'yellow', 'ß', 'blue', 'red']
COLOR_QUERIES = [['red', 'mauve'], ['ß', 'green'], ['blue', 'blue']]
INTEGERS = [3, 7, 3, 0, 12, 7, 3, 42, 12, 3]
INTEGER_QUERIES = [[3, 5], [0, 42], [12, 99]]


def html_standardize(tf):
    """keras-io's custom standardization: lowercase, `<br />` to a space, no punctuation."""
    def standardize(text):
        lowered = tf.strings.lower(text)
        spaced = tf.strings.regex_replace(lowered, '<br />', ' ')
        return tf.strings.regex_replace(spaced, '[%s]' % _escaped_punctuation(), '')
    return standardize


def comma_split(tf):
    def split(text):
        return tf.strings.split(text, sep=',')
    return split


FUNCTIONS = {'html_standardize': html_standardize, 'comma_split': comma_split}


def _escaped_punctuation():
    import re
    import string
    return re.escape(string.punctuation)


# name: (class name, constructor arguments, adapt data or None, adapt batch size, inputs).
# An argument {'function': name} is FUNCTIONS[name](tf).
LAYER_CASES = {
    'tv_int': ('TextVectorization', {}, CORPUS, None, TEXTS),
    'tv_int_2d': ('TextVectorization', {}, [[t] for t in CORPUS], 4, [[t] for t in TEXTS]),
    'tv_sequence_max_tokens': ('TextVectorization',
                               {'max_tokens': 10, 'output_sequence_length': 6}, CORPUS, None,
                               TEXTS),
    'tv_bigrams_multi_hot': ('TextVectorization', {'ngrams': 2, 'output_mode': 'multi_hot'},
                             CORPUS, None, TEXTS),
    'tv_ngrams_count': ('TextVectorization', {'ngrams': [1, 3], 'output_mode': 'count'},
                        CORPUS, None, TEXTS),
    'tv_tf_idf_padded': ('TextVectorization', {'output_mode': 'tf_idf', 'max_tokens': 30,
                                               'pad_to_max_tokens': True}, CORPUS, 3, TEXTS),
    'tv_characters': ('TextVectorization', {'standardize': 'lower', 'split': 'character',
                                            'output_sequence_length': 12}, CORPUS, None, TEXTS),
    'tv_whole_strings': ('TextVectorization', {'standardize': None, 'split': None},
                         COLORS, None, [[c] for c in ['red', 'ß', 'mauve']]),
    'tv_strip_only': ('TextVectorization', {'standardize': 'strip_punctuation'}, CORPUS,
                      None, TEXTS),
    'tv_vocabulary': ('TextVectorization', {'vocabulary': ['dog', 'the', 'über', 'café', '🙂'],
                                            'output_sequence_length': 4}, None, None, TEXTS),
    'tv_vocabulary_tf_idf': ('TextVectorization', {
        'vocabulary': ['dog', 'the', 'cat'], 'idf_weights': [0.5, 0.25, 2.0],
        'output_mode': 'tf_idf'}, None, None, TEXTS),
    'tv_custom_functions': ('TextVectorization', {
        'standardize': {'function': 'html_standardize'}, 'split': {'function': 'comma_split'}},
        ['a,b<br />c', 'B,c,d!', 'a, b,c'], None, ['a,c', 'd<br />e,b']),
    'sl_int': ('StringLookup', {}, COLORS, None, COLOR_QUERIES),
    'sl_oov_buckets': ('StringLookup', {'num_oov_indices': 3}, COLORS, None,
                       [['red', 'mauve', 'cyan', 'teal', 'ochre', 'ß']]),
    'sl_mask': ('StringLookup', {'mask_token': '[MASK]'}, COLORS + ['[MASK]'], None,
                [['[MASK]', 'red', 'mauve']]),
    'sl_max_tokens_ties': ('StringLookup', {'max_tokens': 4}, COLORS, None, COLOR_QUERIES),
    'sl_one_hot': ('StringLookup', {'output_mode': 'one_hot'}, COLORS, None,
                   ['red', 'mauve', 'ß']),
    'sl_multi_hot': ('StringLookup', {'output_mode': 'multi_hot'}, COLORS, None,
                     COLOR_QUERIES),
    'sl_count_padded': ('StringLookup', {'output_mode': 'count', 'max_tokens': 9,
                                         'pad_to_max_tokens': True}, COLORS, None,
                        COLOR_QUERIES),
    'sl_tf_idf': ('StringLookup', {'output_mode': 'tf_idf'}, [COLORS[:4], COLORS[4:8]], 1,
                  COLOR_QUERIES),
    'sl_vocabulary_special': ('StringLookup', {'vocabulary': ['[UNK]', 'a', 'b', 'ç']}, None,
                              None, [['a', 'ç', 'z']]),
    'sl_invert': ('StringLookup', {'vocabulary': ['a', 'b', 'ç'], 'invert': True,
                                   'mask_token': ''}, None, None, [[0, 1, 2, 3, 4, 9]]),
    'il_int': ('IntegerLookup', {}, INTEGERS, None, INTEGER_QUERIES),
    'il_oov_buckets_mask': ('IntegerLookup', {'num_oov_indices': 2, 'mask_token': 0},
                            INTEGERS, None, INTEGER_QUERIES),
    'il_multi_hot': ('IntegerLookup', {'output_mode': 'multi_hot'}, INTEGERS, None,
                     INTEGER_QUERIES),
    'il_tf_idf': ('IntegerLookup', {'output_mode': 'tf_idf'}, [INTEGERS[:5], INTEGERS[5:]],
                  1, INTEGER_QUERIES),
    'il_vocabulary_invert': ('IntegerLookup', {'vocabulary': [12, 3, 7], 'invert': True},
                             None, None, [[0, 1, 2, 3, 4]]),
    'hashing_strings': ('Hashing', {'num_bins': 7}, None, None, [TEXTS]),
    'hashing_many_bins': ('Hashing', {'num_bins': 2 ** 20}, None, None,
                          [[t * 9 for t in TEXTS] + CORPUS]),
    'hashing_integers_mask': ('Hashing', {'num_bins': 5, 'mask_value': 0}, None, None,
                              [[0, 1, 2, 3, -4, 123456789012]]),
    'hashing_string_mask': ('Hashing', {'num_bins': 5, 'mask_value': ''}, None, None,
                            [TEXTS]),
    'hashing_salt': ('Hashing', {'num_bins': 11, 'salt': 133}, None, None, [TEXTS + CORPUS]),
    'hashing_salt_pair': ('Hashing', {'num_bins': 1000, 'salt': [7, 2 ** 40 + 3]}, None,
                          None, [TEXTS]),
    'hashing_one_hot': ('Hashing', {'num_bins': 4, 'output_mode': 'one_hot'}, None, None,
                        ['a', 'b', 'c']),
    'category_one_hot': ('CategoryEncoding', {'num_tokens': 5, 'output_mode': 'one_hot'},
                         None, None, [3, 0, 4]),
    'category_multi_hot': ('CategoryEncoding', {'num_tokens': 6}, None, None,
                           [[0, 1, 1], [5, 4, 0]]),
    'category_count': ('CategoryEncoding', {'num_tokens': 4, 'output_mode': 'count'}, None,
                       None, [[0, 1, 1, 3], [2, 2, 2, 0]]),
    'discretization_boundaries': ('Discretization', {'bin_boundaries': [0.0, 1.0, 2.5]}, None,
                                  None, [[-1.0, 0.0, 0.5], [1.0, 2.5, 9.0]]),
    'discretization_adapt': ('Discretization', {'num_bins': 4}, 'normal:200', None,
                             [[-2.0, -0.3, 0.0], [0.1, 0.7, 3.0]]),
    'discretization_adapt_coarse': ('Discretization', {'num_bins': 3, 'epsilon': 0.1,
                                                       'output_mode': 'one_hot'},
                                    'normal:70', 16, [-1.0, 0.0, 1.0]),
}

# tf.strings cases: name: (function, positional arguments, keyword arguments).
STRING_CASES = {
    'lower': ('lower', [CORPUS], {}),
    'lower_utf8': ('lower', [CORPUS], {'encoding': 'utf-8'}),
    'upper': ('upper', [TEXTS], {}),
    'regex_replace_class': ('regex_replace', [CORPUS, '[aeiou]', '_'], {}),
    'regex_replace_groups': ('regex_replace', [CORPUS, r'(\w+) (\w+)', r'\2 \1'], {}),
    'regex_replace_first': ('regex_replace', [CORPUS, 'the', 'THE'],
                            {'replace_global': False}),
    'regex_replace_unicode': ('regex_replace', [CORPUS, '[éè]', 'e'], {}),
    'regex_replace_dot': ('regex_replace', [TEXTS, '.', 'x'], {}),
    'split_whitespace': ('split', [CORPUS], {}),
    'split_sep': ('split', [['a,b,,c', ',', ''], ], {'sep': ','}),
    'split_scalar': ('split', ['un deux  trois'], {}),
    'strip': ('strip', [['  a b  ', '\tc\n', 'd']], {}),
    'join': ('join', [[['a', 'b'], ['c', 'ß']]], {'separator': '-'}),
    'length': ('length', [CORPUS], {}),
    'length_characters': ('length', [CORPUS], {'unit': 'UTF8_CHAR'}),
    'substr': ('substr', [CORPUS, 1, 5], {}),
    'substr_characters': ('substr', [CORPUS, 0, 3], {'unit': 'UTF8_CHAR'}),
    'unicode_split': ('unicode_split', [TEXTS, 'UTF-8'], {}),
    'to_number': ('to_number', [['1.5', '-2', '3e3', ' 4 ']], {}),
    'to_number_int': ('to_number', [['1', '-22', '333']], {'out_type': 'int64'}),
    'as_string_floats': ('as_string', ['floats'], {}),
    'as_string_precision': ('as_string', ['floats'], {'precision': 2}),
    'as_string_scientific': ('as_string', ['floats'], {'scientific': True}),
    'as_string_shortest': ('as_string', ['floats'], {'shortest': True}),
    'as_string_ints_width': ('as_string', ['ints'], {'width': 5, 'fill': '0'}),
    'as_string_bools': ('as_string', ['bools'], {}),
    'to_hash_bucket_fast': ('to_hash_bucket_fast', [CORPUS + TEXTS, 2 ** 62], {}),
    'to_hash_bucket_strong': ('to_hash_bucket_strong', [CORPUS + TEXTS, 2 ** 62, [5, 2 ** 63 - 9]],
                              {}),
    'ngrams': ('ngrams', ['split:CORPUS', 2], {}),
    'ngrams_widths': ('ngrams', ['split:CORPUS', [1, 3]], {'separator': '_'}),
    'reduce_join': ('reduce_join', [[['a', 'b'], ['c', 'd']]], {'axis': 1, 'separator': '+'}),
}
NUMBERS = {'floats': [0.5, -1.25, 3.0, 1e-7, 123456.789], 'ints': [0, -12, 345],
           'bools': [True, False]}


def layer_arguments(arguments, tf):
    """A case's constructor arguments: functions made with `tf`, `ngrams` a tuple."""
    return {k: FUNCTIONS[v['function']](tf) if isinstance(v, dict) else
            tuple(v) if k == 'ngrams' and isinstance(v, list) else v
            for k, v in arguments.items()}


def adapt_data(data):
    """A case's adapt data as an array ('normal:N': N seeded normal float32 numbers)."""
    import numpy as np
    if isinstance(data, str) and data.startswith('normal:'):
        return np.random.default_rng(0).normal(size=int(data[7:])).astype('float32')
    return np.array(data)


def string_argument(value, tf):
    """A `tf.strings` case's argument: 'split:CORPUS' the split corpus, a NUMBERS name that
    tensor, else itself."""
    if value == 'split:CORPUS':
        return tf.strings.split(CORPUS)
    if value in NUMBERS:
        dtype = {'floats': 'float32', 'ints': 'int64', 'bools': 'bool'}[value]
        return tf.constant(NUMBERS[value], dtype=dtype)
    return value


def plain(value, to_lists):
    """Outputs as JSON data: `to_lists(value)` turns a framework's tensors (and ragged
    tensors) into lists or arrays, then arrays become lists, `bytes` text (invalid UTF-8 as
    `\\x` escapes), numpy scalars Python numbers, functions their names."""
    import numpy as np
    value = to_lists(value)
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return [plain(v, to_lists) for v in value]
    if isinstance(value, dict):
        return {k: plain(v, to_lists) for k, v in value.items()}
    if isinstance(value, bytes):
        return value.decode('utf-8', 'backslashreplace')
    if isinstance(value, np.generic):
        return value.item()
    if callable(value):
        return getattr(value, '__name__', 'function')
    return value

# A directory of texts for text_dataset_from_directory: class -> file names (under
# `<class>/`, some in a nested folder); each file holds its own path's words.
TEXT_TREE = {'neg': ['a.txt', 'b.txt', 'c.TXT', 'deep/d.txt', 'e.txt', 'f.txt', 'g.txt'],
             'neutral': ['h.txt', 'i.txt', 'j.txt', 'k.txt', 'l.txt'],
             'pos': ['m.txt', 'deep/n.txt', 'o.txt', 'p.txt', 'q.txt', 'r.txt', 's.txt',
                     't.md']}
DIRECTORY_CASES = {
    'training': {'validation_split': 0.3, 'subset': 'training', 'seed': 1337},
    'validation': {'validation_split': 0.3, 'subset': 'validation', 'seed': 1337},
    'unshuffled': {'shuffle': False, 'label_mode': 'categorical'},
    'max_length': {'max_length': 9, 'seed': 3, 'labels': None},
}


def write_text_tree(root):
    """Writes TEXT_TREE under `root` (and a hidden folder, which is skipped)."""
    import os
    for label, names in TEXT_TREE.items():
        for name in names:
            path = os.path.join(root, label, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, 'w', encoding='utf-8') as f:
                f.write('%s/%s — é' % (label, name))
    os.makedirs(os.path.join(root, '.hidden'), exist_ok=True)
    with open(os.path.join(root, '.hidden', 'x.txt'), 'w') as f:
        f.write('hidden')
