"""`python -m torchk run SCRIPT`: a tf.keras 2 script run as `python SCRIPT` runs it."""
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _launch(tmp_path, source, *args):
    script = tmp_path / 'script.py'
    script.write_text(textwrap.dedent(source))
    environment = dict(os.environ, PYTHONPATH=ROOT)
    environment.pop('KERAS_BACKEND', None)
    return script, subprocess.run(
        [sys.executable, '-m', 'torchk', 'run', os.path.relpath(script, tmp_path.parent)]
        + list(args),
        capture_output=True, text=True, env=environment, cwd=str(tmp_path.parent), timeout=300)


def test_argv_name_path_and_exit_code(tmp_path):
    script, done = _launch(tmp_path, '''
        import os, sys
        print(__name__, sys.argv, sys.path[0] == os.path.dirname(__file__),
              os.path.isabs(__file__), os.environ['KERAS_BACKEND'])
        sys.exit(3)
    ''', '--epochs', '2', 'x')
    assert done.stdout == "__main__ ['%s', '--epochs', '2', 'x'] True True torchk.core\n" \
        % script, done.stderr
    assert done.returncode == 3


def test_an_exception_prints_the_scripts_traceback(tmp_path):
    script, done = _launch(tmp_path, '''
        def fail():
            raise ValueError('bad value')
        fail()
    ''')
    assert done.returncode == 1
    assert done.stderr == (
        'Traceback (most recent call last):\n'
        '  File "%s", line 4, in <module>\n    fail()\n'
        '  File "%s", line 3, in fail\n    raise ValueError(\'bad value\')\n'
        'ValueError: bad value\n' % (script, script))


def test_a_tensorflow_script_trains_a_linear_regression(tmp_path):
    """tf ops, a Dataset, tf.function and a GradientTape loop, as TF 2 tutorials write them;
    the loss reaches 1e-6 and the weights those of the data (2, -3; bias 1)."""
    script, done = _launch(tmp_path, '''
        import numpy as np
        import tensorflow as tf

        tf.random.set_seed(1)
        gpus = tf.config.list_physical_devices('GPU')
        for gpu in gpus:
            tf.config.experimental.set_memory_growth(gpu, True)
        x = np.random.RandomState(0).normal(size=(256, 2)).astype('float32')
        y = x @ np.array([[2.], [-3.]], 'float32') + 1.
        dataset = (tf.data.Dataset.from_tensor_slices((x, y)).shuffle(256)
                   .batch(32).prefetch(tf.data.AUTOTUNE))
        w = tf.Variable(tf.random.normal([2, 1], stddev=0.1))
        b = tf.Variable(tf.zeros([1]))

        @tf.function
        def step(xb, yb):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(tf.matmul(xb, w) + b - yb))
            dw, db = tape.gradient(loss, [w, b])
            w.assign_sub(0.1 * dw)
            b.assign_sub(0.1 * db)
            return loss

        for epoch in range(20):
            for xb, yb in dataset:
                loss = step(xb, yb)
        print('loss %.6f' % loss.numpy())
        print('w', np.round(w.numpy().ravel(), 3).tolist(), 'b', round(float(b.numpy()[0]), 3))
    ''')
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert float(lines[0].split()[1]) < 1e-6
    assert lines[1] == 'w [2.0, -3.0] b 1.0'


def test_numpy_functions_take_a_models_eager_outputs(tmp_path):
    """keras-io's engineers guide prints `np.var` of a layer's eager output."""
    _, done = _launch(tmp_path, '''
        import numpy as np
        from tensorflow import keras
        layer = keras.layers.Dense(3, kernel_initializer='ones')
        out = layer(np.array([[1., 2.], [3., 5.]], 'float32'))
        print('%.4f %.4f' % (np.var(out), np.mean(out, axis=0)[1]), type(np.max(out)).__name__)
    ''')
    assert done.stdout.split()[-3:] == ['6.2500', '5.5000', 'float32'], done.stderr
