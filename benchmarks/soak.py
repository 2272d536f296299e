"""Soak: many K.function calls and many build/fit/clear_session cycles in one process.

Reports the resident memory (RSS) growth and the drift of the per-call time between the first
and the last tenth of the run; a leak shows as RSS growing with the number of cycles.

    python benchmarks/soak.py [--calls 100000] [--cycles 500]
"""
import argparse
import os
import statistics
import time

os.environ.setdefault('KERAS_BACKEND', 'torchk.core')

import numpy as np  # noqa: E402
import torch  # noqa: E402

import keras  # noqa: E402
from keras import backend as K  # noqa: E402


def rss_mib():
    """The process' resident set size in MiB, from /proc/self/status."""
    with open('/proc/self/status') as status:
        for line in status:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) / 1024.
    raise RuntimeError('no VmRSS in /proc/self/status')


def drift(times):
    """(median of the first tenth, median of the last tenth) of `times`, in microseconds."""
    tenth = max(1, len(times) // 10)
    return (statistics.median(times[:tenth]) * 1e6, statistics.median(times[-tenth:]) * 1e6)


def soak_function_calls(calls):
    x = K.placeholder(shape=(None, 16))
    w = K.variable(np.random.rand(16, 8).astype('float32'))
    f = K.function([x], [K.sum(K.relu(K.dot(x, w)))], updates=[K.update_add(w, w * 0.)])
    value = np.random.rand(32, 16).astype('float32')
    f([value])
    start_rss, times = rss_mib(), []
    for _ in range(calls):
        begin = time.perf_counter()
        f([value])
        times.append(time.perf_counter() - begin)
    first, last = drift(times)
    print('K.function: %d calls, RSS %.1f -> %.1f MiB (%+.1f), per call %.1f us first tenth, '
          '%.1f us last tenth (%+.1f%%)' % (calls, start_rss, rss_mib(), rss_mib() - start_rss,
                                          first, last, 100. * (last / first - 1.)))


def soak_model_cycles(cycles):
    x = np.random.rand(64, 20).astype('float32')
    y = keras.utils.to_categorical(np.random.randint(0, 3, 64), 3)
    rss, times = [], []
    for cycle in range(cycles):
        begin = time.perf_counter()
        model = keras.models.Sequential([keras.layers.Dense(32, activation='relu',
                                                            input_shape=(20,)),
                                         keras.layers.Dropout(0.1),
                                         keras.layers.Dense(3, activation='softmax')])
        model.compile('adam', 'categorical_crossentropy')
        model.fit(x, y, batch_size=16, epochs=1, verbose=0)
        K.clear_session()
        del model
        times.append(time.perf_counter() - begin)
        rss.append(rss_mib())
    first, last = drift(times)
    tenth = max(1, cycles // 10)
    print('build/fit/clear_session: %d cycles, RSS after the first tenth %.1f MiB, at the end '
          '%.1f MiB (%+.1f, %+.3f MiB per cycle over the last 90%%), per cycle %.1f ms first '
          'tenth, %.1f ms last tenth (%+.1f%%)'
          % (cycles, rss[tenth - 1], rss[-1], rss[-1] - rss[tenth - 1],
             (rss[-1] - rss[tenth - 1]) / max(1, cycles - tenth), first / 1e3, last / 1e3,
             100. * (last / first - 1.)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--calls', type=int, default=100000)
    parser.add_argument('--cycles', type=int, default=500)
    args = parser.parse_args()
    torch.set_num_threads(1)
    soak_function_calls(args.calls)
    soak_model_cycles(args.cycles)


if __name__ == '__main__':
    main()
