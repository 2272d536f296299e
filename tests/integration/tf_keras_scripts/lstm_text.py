"""Text classification: Tokenizer, pad_sequences, Embedding + LSTM."""
import numpy as np
import tensorflow as tf
from tensorflow import keras
from tensorflow.keras.preprocessing.sequence import pad_sequences
from tensorflow.keras.preprocessing.text import Tokenizer

keras.utils.set_random_seed(2)
rng = np.random.RandomState(2)
good, bad = ['great', 'fine', 'lovely', 'superb'], ['awful', 'poor', 'dull', 'broken']
neutral = ['the', 'movie', 'was', 'and', 'plot', 'acting', 'very', 'quite']
texts, labels = [], []
for _ in range(800):
    label = rng.randint(2)
    words = list(rng.choice(neutral, rng.randint(3, 8)))
    words.insert(rng.randint(len(words)), rng.choice(good if label else bad))
    texts.append(' '.join(words))
    labels.append(label)
labels = np.array(labels)

tokenizer = Tokenizer(num_words=50, oov_token='<oov>')
tokenizer.fit_on_texts(texts)
sequences = pad_sequences(tokenizer.texts_to_sequences(texts), maxlen=10, padding='post')

model = keras.Sequential([
    keras.layers.Embedding(50, 16, input_length=10),
    keras.layers.LSTM(16),
    keras.layers.Dense(1, activation='sigmoid'),
])
model.compile(loss=keras.losses.BinaryCrossentropy(), optimizer=keras.optimizers.RMSprop(0.01),
              metrics=[keras.metrics.BinaryAccuracy(name='accuracy')])
model.fit(sequences[:600], labels[:600], epochs=5, batch_size=32, verbose=0)
_, accuracy = model.evaluate(sequences[600:], labels[600:], verbose=0)
print('RESULT accuracy=%.4f' % accuracy)
