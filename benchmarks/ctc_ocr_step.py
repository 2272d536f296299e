"""CTC: one training step of the OCR-like model of tests/integration/test_ctc_model.py on torchk
(Keras 2.3.1 `train_on_batch`, batch 32) against the same model in raw PyTorch, measured in one
run; then `K.ctc_decode` throughput on torchk (greedy, beam width 10 and 100).

The model: (20 steps, 8 features) -> Conv1D(16, 3, 'same', relu) -> Bidirectional(GRU(16,
reset_after=True)) -> Dense(6, softmax) -> `Lambda(K.ctc_batch_cost)`, Adam(lr=0.01,
clipnorm=5) (Keras 2.3.1 clips by the global norm of all gradients). `reset_after=True` makes
Keras' GRU compute what `nn.GRU` computes. The raw model feeds `F.ctc_loss` the
`log_softmax` of the Dense logits (the natural torch formulation; torchk's `ctc_batch_cost`
takes `log(softmax + epsilon)`, renormalized per frame) and averages the per-sample losses, as
Keras averages the Lambda's `(samples, 1)` output.

Decoding: batch 32, 50 time steps, 30 classes (29 labels + blank) of random softmax
probabilities, all steps valid; throughput in samples per second.

Run:  python benchmarks/ctc_ocr_step.py
"""
import numpy as np
import torch
import torch.nn.functional as F

from common import seconds_per_call, report

import keras  # noqa: E402
from keras import backend as K  # noqa: E402
from keras.layers import GRU, Bidirectional, Conv1D, Dense, Input, Lambda  # noqa: E402
from keras.models import Model  # noqa: E402
from torchk import config  # noqa: E402

BATCH, STEPS, FEATURES, CLASSES, MAX_LABELS, FILTERS, UNITS = 32, 20, 8, 5, 4, 16, 16
DECODE_STEPS, DECODE_CLASSES = 50, 30


def data(rng):
    x = rng.normal(size=(BATCH, STEPS, FEATURES)).astype('float32')
    label_length = rng.randint(2, MAX_LABELS + 1, size=(BATCH, 1)).astype('int64')
    labels = rng.randint(0, CLASSES, size=(BATCH, MAX_LABELS)).astype('int64')
    labels[np.arange(MAX_LABELS) >= label_length] = -1
    input_length = rng.randint(12, STEPS + 1, size=(BATCH, 1)).astype('int64')
    return x, labels, input_length, label_length


def keras_step(x, labels, input_length, label_length):
    sequence = Input(shape=(STEPS, FEATURES))
    labels_input = Input(shape=(MAX_LABELS,))
    input_length_input = Input(shape=(1,), dtype='int64')
    label_length_input = Input(shape=(1,), dtype='int64')
    h = Conv1D(FILTERS, 3, padding='same', activation='relu')(sequence)
    h = Bidirectional(GRU(UNITS, return_sequences=True, reset_after=True))(h)
    y_pred = Dense(CLASSES + 1, activation='softmax')(h)
    loss = Lambda(lambda args: K.ctc_batch_cost(*args), output_shape=(1,), name='ctc')(
        [labels_input, y_pred, input_length_input, label_length_input])
    model = Model([sequence, labels_input, input_length_input, label_length_input], loss)
    model.compile(loss={'ctc': lambda y_true, y_pred: y_pred},
                  optimizer=keras.optimizers.Adam(lr=0.01, clipnorm=5.))
    inputs = [x, labels, input_length, label_length]
    dummy = np.zeros((BATCH, 1), 'float32')
    return lambda: model.train_on_batch(inputs, dummy)


class TorchModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv1d(FEATURES, FILTERS, 3, padding=1)
        self.gru = torch.nn.GRU(FILTERS, UNITS, batch_first=True, bidirectional=True)
        self.dense = torch.nn.Linear(2 * UNITS, CLASSES + 1)

    def forward(self, x):
        h = torch.relu(self.conv(x.transpose(1, 2))).transpose(1, 2)
        h, _ = self.gru(h)
        return F.log_softmax(self.dense(h), -1)


def torch_step(x, labels, input_length, label_length):
    device = config.device()
    model = TorchModel().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01, eps=1e-7)
    parameters = list(model.parameters())
    targets = np.maximum(labels, 0)  # padding ignored past label_length

    def step():
        inputs = torch.as_tensor(x, device=device)
        log_probs = model(inputs).transpose(0, 1)
        loss = F.ctc_loss(log_probs, torch.as_tensor(targets, device=device),
                          torch.as_tensor(input_length[:, 0], device=device),
                          torch.as_tensor(label_length[:, 0], device=device),
                          blank=CLASSES, reduction='none').mean()
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(parameters, 5.)
        optimizer.step()
        return loss.item()
    return step


def decode_throughput(rng):
    logits = rng.normal(0., 2., size=(BATCH, DECODE_STEPS, DECODE_CLASSES))
    y = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    y = torch.as_tensor(y.astype('float32'), device=config.device())
    lengths = torch.full((BATCH,), DECODE_STEPS, dtype=torch.int64, device=config.device())
    sync = torch.cuda.synchronize if config.device().type == 'cuda' else None
    for name, kwargs, number in [('greedy', dict(greedy=True), 200),
                                 ('beam width 10', dict(greedy=False, beam_width=10), 20),
                                 ('beam width 100', dict(greedy=False, beam_width=100), 5)]:
        seconds = seconds_per_call(lambda: K.ctc_decode(y, lengths, **kwargs),
                                   repeats=3, number=number, sync=sync)
        print('%-42s %9.1f us/batch   %10.0f samples/s'
              % ('ctc_decode %s (batch %d, T %d, C %d)'
                 % (name, BATCH, DECODE_STEPS, DECODE_CLASSES), seconds * 1e6,
                 BATCH / seconds))


def main():
    rng = np.random.RandomState(0)
    batch = data(rng)
    print('device: %s, torch threads: %d' % (config.device(), torch.get_num_threads()))
    report('CTC OCR train_on_batch (batch %d)' % BATCH,
           seconds_per_call(keras_step(*batch), repeats=5, number=20),
           seconds_per_call(torch_step(*batch), repeats=5, number=20))
    decode_throughput(rng)


if __name__ == '__main__':
    main()
