"""TextVectorization on torchk against TensorFlow's, on the same machine: adapting and
vectorizing 25,000 synthetic IMDB-sized reviews (~230 words each, Zipf-distributed words
with capitals and punctuation, 20,000 max tokens, sequences of 500).

torchk runs in this process; TensorFlow's Keras 2 (tf_keras) runs this script again in a
Python with TensorFlow (`--tf-python`, default the oracle venv) with `--framework tf`. Each
side makes the same reviews from the same seed, warms up on 1,000 reviews, then takes the
best of `--repeats` runs of `adapt` (on the whole array, batch size 32 as tf.keras' adapt
does) and of vectorizing the whole array, and checks its vocabulary's head and the
vectorized sum against the other side's. The last line prints the ratio TF time / torchk
time (above 1: torchk is faster).

Run:  python benchmarks/text_vectorization.py [--reviews N] [--repeats R] [--tf-python PY]
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

ORACLE_PYTHON = '/tmp/oracle-env/bin/python'
PUNCTUATION = ['.', ',', '!', '?', ';', ':', '"', "'s", '(', ')', '-', '<br />']


def reviews(count, seed=0, words_per_review=230, vocabulary=30000):
    """Synthetic reviews: Zipf-distributed words ('w123'), some capitalized, some followed
    by punctuation, as a numpy array of str."""
    rng = np.random.default_rng(seed)
    words = np.array(['w%d' % i for i in range(vocabulary)])
    lengths = rng.integers(words_per_review // 2, words_per_review * 3 // 2, count)
    ranks = np.minimum(rng.zipf(1.2, lengths.sum()) - 1, vocabulary - 1)
    tokens = words[ranks].astype(object)
    capital = rng.random(len(tokens)) < 0.1
    tokens[capital] = [t.upper() for t in tokens[capital]]
    marks = rng.random(len(tokens)) < 0.15
    tokens[marks] = [t + PUNCTUATION[i % len(PUNCTUATION)]
                     for i, t in zip(rng.integers(0, 12, marks.sum()), tokens[marks])]
    ends = np.cumsum(lengths)
    return np.array([' '.join(tokens[end - length:end]) for end, length in zip(ends, lengths)])


def measure(framework, count, repeats):
    """{'adapt': s, 'vectorize': s, 'head': first vocabulary tokens, 'sum': of the ids}."""
    if framework == 'tf':
        os.environ.setdefault('TF_USE_LEGACY_KERAS', '1')
        os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')
        import tf_keras as keras
    else:
        os.environ.setdefault('KERAS_BACKEND', 'torchk.core')
        import keras
    texts = reviews(count)

    def layer():
        return keras.layers.TextVectorization(max_tokens=20000, output_sequence_length=500)

    warm = layer()
    warm.adapt(texts[:1000])
    warm(texts[:1000])
    adapt_seconds, vectorize_seconds = [], []
    for _ in range(repeats):
        vectorize = layer()
        start = time.perf_counter()
        vectorize.adapt(texts)
        adapt_seconds.append(time.perf_counter() - start)
        start = time.perf_counter()
        ids = vectorize(texts)
        vectorize_seconds.append(time.perf_counter() - start)
    ids = np.asarray(ids)
    return {'adapt': min(adapt_seconds), 'vectorize': min(vectorize_seconds),
            'head': [str(t) for t in vectorize.get_vocabulary()[:20]],
            'sum': int(ids.sum()), 'shape': list(ids.shape)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--reviews', type=int, default=25000)
    parser.add_argument('--repeats', type=int, default=3)
    parser.add_argument('--framework', choices=('torchk', 'tf'), default=None)
    parser.add_argument('--tf-python', default=ORACLE_PYTHON)
    args = parser.parse_args()
    if args.framework is not None:
        print(json.dumps(measure(args.framework, args.reviews, args.repeats)))
        return
    ours = measure('torchk', args.reviews, args.repeats)
    environment = dict(os.environ)
    environment.pop('PYTHONPATH', None)
    environment.pop('KERAS_BACKEND', None)
    completed = subprocess.run(
        [args.tf_python, os.path.abspath(__file__), '--framework', 'tf', '--reviews',
         str(args.reviews), '--repeats', str(args.repeats)],
        capture_output=True, text=True, env=environment, check=True)
    theirs = json.loads(completed.stdout.strip().splitlines()[-1])
    same = ours['head'] == theirs['head'] and ours['sum'] == theirs['sum']
    print('%d reviews, %s ids; vocabulary head and ids %s TensorFlow\'s'
          % (args.reviews, ours['shape'], 'equal to' if same else 'DIFFERENT from'))
    for step in ('adapt', 'vectorize'):
        print('%-10s torchk %.3f s   TF %.3f s   ratio %.2f'
              % (step, ours[step], theirs[step], theirs[step] / ours[step]))
    total = theirs['adapt'] + theirs['vectorize']
    print('adapt + vectorize: TF / torchk = %.2f' % (total / (ours['adapt'] + ours['vectorize'])))
    if not same:
        sys.exit(1)


if __name__ == '__main__':
    main()
