"""Training steps of Embedding-RNN-Dense models on torchk (Keras 2.3.1 `train_on_batch`)
against raw PyTorch, one row per recurrent path, timed interleaved in one process.

Rows (80 timesteps; sizes of ../shared/bench's gru and lstm_dropout workloads):
- gru: Keras 2.3.1's default GRU(64) (reset_after=False), hand-written kernel, and the same
  model through the generic loop; raw torch is nn.GRU (reset_after=True, not the same math).
- gru reset_after: GRU(64, reset_after=True), hand-written kernel; raw nn.GRU (same math).
- lstm: LSTM(64), torch.lstm; raw nn.LSTM.
- lstm hard_sigmoid: LSTM(64) with hard-sigmoid gates, hand-written kernel; raw nn.LSTM.
- lstm_dropout: LSTM(128, dropout=.2, recurrent_dropout=.2), batch 32; raw nn.LSTM after
  nn.Dropout (no recurrent dropout: a lower bound).
- simple_rnn: SimpleRNN(64); raw nn.RNN.
- masked lstm / gru: Embedding(mask_zero=True) with right-padded random lengths; raw torch
  packs the sequences (`pack_padded_sequence`) for nn.LSTM / nn.GRU.

Run:  python benchmarks/rnn_train_step.py [row ...]
"""
import sys

import numpy as np
import torch

from common import interleaved_seconds, report

from keras import layers  # noqa: E402
from keras.models import Sequential  # noqa: E402
from torchk import rnn  # noqa: E402

STEPS, VOCABULARY = 80, 10000


def keras_step(x, y, layer, embedding, mask_zero=False, generic=False):
    rnn.fast_paths = not generic
    try:
        model = Sequential([layers.Embedding(VOCABULARY, embedding, input_length=STEPS,
                                             mask_zero=mask_zero),
                            layer, layers.Dense(1, activation='sigmoid')])
        model.compile(optimizer='adam', loss='binary_crossentropy')
    finally:
        rnn.fast_paths = True
    return lambda: model.train_on_batch(x, y)


class TorchModel(torch.nn.Module):
    def __init__(self, recurrent_class, embedding, units, dropout, packed):
        super().__init__()
        self.embedding = torch.nn.Embedding(VOCABULARY, embedding)
        self.dropout = torch.nn.Dropout(dropout)
        self.recurrent = recurrent_class(embedding, units, batch_first=True)
        self.dense = torch.nn.Linear(units, 1)
        self.packed = packed

    def forward(self, tokens, lengths):
        x = self.dropout(self.embedding(tokens))
        if self.packed:
            x = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True,
                                                        enforce_sorted=False)
        _, h = self.recurrent(x)
        h = h[0] if isinstance(h, tuple) else h
        return torch.sigmoid(self.dense(h[-1]))


def torch_step(x, y, lengths, recurrent_class, embedding, units, dropout=0., packed=False):
    model = TorchModel(recurrent_class, embedding, units, dropout, packed)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)

    def step():
        optimizer.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy(
            model(torch.as_tensor(x), lengths), torch.as_tensor(y))
        loss.backward()
        optimizer.step()
        return loss.item()
    return step


def data(batch, masked):
    rng = np.random.RandomState(0)
    x = rng.randint(1, VOCABULARY, size=(batch, STEPS)).astype('int64')
    lengths = rng.randint(STEPS // 4, STEPS + 1, size=batch) if masked else np.full(batch, STEPS)
    x[np.arange(STEPS)[None] >= lengths[:, None]] = 0
    y = rng.randint(0, 2, size=(batch, 1)).astype('float32')
    return x, y, torch.as_tensor(lengths)


def rows():
    """name -> (batch, masked, raw torch arguments, [(label, keras step arguments)])."""
    def lstm(**options):
        return layers.LSTM(64, recurrent_activation='sigmoid', **options)
    return {
        'gru': (64, False, (torch.nn.GRU, 64, 64), [
            ('kernel', dict(layer=layers.GRU(64), embedding=64)),
            ('generic loop', dict(layer=layers.GRU(64), embedding=64, generic=True))]),
        'gru_reset_after': (64, False, (torch.nn.GRU, 64, 64), [
            ('kernel', dict(layer=layers.GRU(64, reset_after=True), embedding=64))]),
        'lstm': (64, False, (torch.nn.LSTM, 64, 64), [
            ('torch.lstm', dict(layer=lstm(), embedding=64))]),
        'lstm_hard_sigmoid': (64, False, (torch.nn.LSTM, 64, 64), [
            ('kernel', dict(layer=layers.LSTM(64, recurrent_activation='hard_sigmoid'),
                            embedding=64))]),
        'lstm_dropout': (32, False, (torch.nn.LSTM, 128, 128, 0.2), [
            ('kernel', dict(layer=layers.LSTM(128, dropout=.2, recurrent_dropout=.2),
                            embedding=128)),
            ('generic loop', dict(layer=layers.LSTM(128, dropout=.2, recurrent_dropout=.2),
                                  embedding=128, generic=True))]),
        'simple_rnn': (64, False, (torch.nn.RNN, 64, 64), [
            ('kernel', dict(layer=layers.SimpleRNN(64), embedding=64))]),
        'masked_lstm': (64, True, (torch.nn.LSTM, 64, 64, 0., True), [
            ('kernel', dict(layer=lstm(), embedding=64, mask_zero=True))]),
        'masked_gru': (64, True, (torch.nn.GRU, 64, 64, 0., True), [
            ('kernel', dict(layer=layers.GRU(64), embedding=64, mask_zero=True))]),
    }


def main(selected):
    torch.set_num_threads(2)
    torch.manual_seed(0)
    print('torch threads: %d; timings interleaved, medians of 5 rounds' % torch.get_num_threads())
    for name, (batch, masked, raw, variants) in rows().items():
        if selected and name not in selected:
            continue
        x, y, lengths = data(batch, masked)
        fns = [torch_step(x, y, lengths, *raw)] + [keras_step(x, y, **options)
                                                   for _, options in variants]
        times = interleaved_seconds(fns, repeats=5, number=5)
        for (label, _), seconds in zip(variants, times[1:]):
            report('%s (%s)' % (name, label), seconds, times[0])


if __name__ == '__main__':
    main(sys.argv[1:])
