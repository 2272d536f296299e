"""A Keras 2 model trained by a plain PyTorch loop.

Run:  python examples/keras_model_in_torch_loop.py
`to_torch(model)` gives a `torch.nn.Module` whose parameters are the Keras model's weights
and whose forward runs the model with autograd. A torch `DataLoader`, `torch.optim.AdamW`
and a cosine learning-rate schedule train it; Keras' `evaluate` then sees the trained
weights. `train()`/`eval()` switch Keras' learning phase (Dropout, BatchNormalization).
Synthetic data, no downloads.
"""
import os

os.environ.setdefault('KERAS_BACKEND', 'torchk.core')

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

from keras.layers import BatchNormalization, Dense, Dropout  # noqa: E402
from keras.models import Sequential  # noqa: E402

from torchk.interop import to_torch  # noqa: E402


def make_data(samples, features=20, seed=0):
    """Four classes defined by the signs of two random projections (not linearly separable)."""
    rng = np.random.RandomState(seed)
    directions = np.random.RandomState(42).normal(size=(features, 2))
    points = rng.normal(size=(samples, features)).astype('float32')
    projections = points.dot(directions)
    labels = (projections[:, 0] > 0).astype('int64') * 2 + (projections[:, 1] > 0)
    return points, labels


def main():
    torch.manual_seed(0)
    x_train, y_train = make_data(4000, seed=0)
    x_test, y_test = make_data(1000, seed=1)

    # A Keras 2 model, as it would be written for any backend; it outputs logits.
    model = Sequential([
        Dense(64, activation='relu', input_shape=(20,)),
        BatchNormalization(),
        Dropout(0.2),
        Dense(4),
    ])

    module = to_torch(model)
    print(module)
    epochs = 5
    loader = DataLoader(TensorDataset(torch.from_numpy(x_train), torch.from_numpy(y_train)),
                        batch_size=64, shuffle=True)
    optimizer = torch.optim.AdamW(module.parameters(), lr=0.01, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs * len(loader))
    for epoch in range(epochs):
        module.train()                       # learning phase 1
        total = 0.
        for inputs, targets in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(module(inputs), targets)
            loss.backward()
            optimizer.step()
            scheduler.step()
            total += loss.item() * len(inputs)
        module.eval()                        # learning phase 0
        with torch.no_grad():
            logits = module(torch.from_numpy(x_test))
        accuracy = (logits.argmax(-1).numpy() == y_test).mean()
        print('epoch %d  train loss: %.4f  test accuracy: %.4f  lr: %.5f'
              % (epoch + 1, total / len(x_train), accuracy, scheduler.get_last_lr()[0]))

    # The Keras model holds the trained weights: Keras' predict gives what torch computed.
    predicted = model.predict(x_test, batch_size=256)
    print('keras predict accuracy: %.4f  same as torch: %s'
          % ((predicted.argmax(-1) == y_test).mean(),
             np.allclose(predicted, logits.numpy(), atol=1e-5)))


if __name__ == '__main__':
    main()
