"""Embedding-LSTM(64)-Dense training step on torchk (Keras 2.3.1 `train_on_batch`, batch 64,
80 timesteps) against the same model in raw PyTorch (`nn.LSTM`), measured in one run.

Keras 2.3.1's default LSTM (tanh, sigmoid gates, no dropout) is exactly torch's LSTM, and
torchk runs it with the fused `torch.lstm`. A hard-sigmoid LSTM, which torch cannot compute,
takes torchk's hand-written LSTM kernel (rnn_kernels.py); its row compares that kernel with
the fused sigmoid model in raw torch. benchmarks/rnn_train_step.py has the other paths.

Run:  python benchmarks/lstm_train_step.py
"""
import numpy as np
import torch

from common import report, seconds_per_call

from keras.layers import LSTM, Dense, Embedding  # noqa: E402
from keras.models import Sequential  # noqa: E402
from torchk import config  # noqa: E402

BATCH, STEPS, VOCABULARY, EMBEDDING, UNITS = 64, 80, 1000, 32, 64


def keras_step(x, y, **lstm_options):
    model = Sequential([Embedding(VOCABULARY, EMBEDDING, input_length=STEPS),
                        LSTM(UNITS, **lstm_options), Dense(1, activation='sigmoid')])
    model.compile(optimizer='adam', loss='binary_crossentropy')
    return lambda: model.train_on_batch(x, y)


class TorchModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = torch.nn.Embedding(VOCABULARY, EMBEDDING)
        self.lstm = torch.nn.LSTM(EMBEDDING, UNITS, batch_first=True)
        self.dense = torch.nn.Linear(UNITS, 1)

    def forward(self, tokens):
        _, (h, _) = self.lstm(self.embedding(tokens))
        return torch.sigmoid(self.dense(h[-1]))


def torch_step(x, y):
    device = config.device()
    model = TorchModel().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)

    def step():
        tokens = torch.as_tensor(x, device=device)
        targets = torch.as_tensor(y, device=device)
        optimizer.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy(model(tokens), targets)
        loss.backward()
        optimizer.step()
        return loss.item()
    return step


def main():
    rng = np.random.RandomState(0)
    x = rng.randint(1, VOCABULARY, size=(BATCH, STEPS)).astype('int64')
    y = rng.randint(0, 2, size=(BATCH, 1)).astype('float32')
    print('device: %s, torch threads: %d' % (config.device(), torch.get_num_threads()))
    raw = seconds_per_call(torch_step(x, y), repeats=3, number=5)
    report('LSTM default (fused torch.lstm)', seconds_per_call(
        keras_step(x, y), repeats=3, number=5), raw)
    report('LSTM hard_sigmoid (rnn_kernels)', seconds_per_call(
        keras_step(x, y, recurrent_activation='hard_sigmoid'), repeats=3, number=5), raw)


if __name__ == '__main__':
    main()
