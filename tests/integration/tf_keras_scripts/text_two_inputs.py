"""Raw strings in: a review and its product category, an adapted TextVectorization and a
StringLookup inside a two-input model, trained, saved to .keras and loaded back."""
import os
import tempfile

import numpy as np
import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import layers

keras.utils.set_random_seed(4)
rng = np.random.RandomState(4)
good = ['great', 'lovely', 'superb', 'wonderful', 'excellent', 'très bon']
bad = ['awful', 'poor', 'dull', 'broken', 'terrible', 'nul']
filler = ['the', 'product', 'was', 'and', 'it', 'really', 'quite', 'for', 'me', 'Überall']
categories = ['books', 'music', 'garden', 'kitchen', 'toys']


def make(count):
    texts, kinds, labels = [], [], []
    for _ in range(count):
        kind = rng.randint(len(categories))
        # Garden and kitchen products are liked more often: the category carries signal too.
        label = int(rng.rand() < (0.7 if kind in (2, 3) else 0.35))
        words = list(rng.choice(filler, rng.randint(4, 12)))
        for _ in range(rng.randint(1, 3)):
            words.insert(rng.randint(len(words) + 1), rng.choice(good if label else bad))
        if rng.rand() < 0.1:  # a review that says the opposite of its label
            label = 1 - label
        texts.append(' '.join(words).capitalize() + rng.choice(['.', '!', '?']))
        kinds.append(categories[kind])
        labels.append(label)
    return np.array(texts), np.array(kinds), np.array(labels, dtype='float32')


train_text, train_kind, train_y = make(1200)
test_text, test_kind, test_y = make(300)

vectorize = layers.TextVectorization(max_tokens=200, output_sequence_length=16)
vectorize.adapt(train_text)
lookup = layers.StringLookup(output_mode='one_hot')
lookup.adapt(train_kind)

review = keras.Input(shape=(1,), dtype='string', name='review')
kind = keras.Input(shape=(1,), dtype=tf.string, name='kind')
x = layers.Embedding(vectorize.vocabulary_size(), 16)(vectorize(review))
x = layers.GlobalAveragePooling1D()(x)
x = layers.concatenate([x, lookup(kind)])
x = layers.Dense(16, activation='relu')(x)
output = layers.Dense(1, activation='sigmoid')(x)
model = keras.Model([review, kind], output)
model.compile(optimizer=keras.optimizers.Adam(0.01), loss='binary_crossentropy',
              metrics=['accuracy'])
model.fit({'review': train_text, 'kind': train_kind}, train_y, epochs=6, batch_size=32,
          validation_split=0.1, verbose=0)

path = os.path.join(tempfile.mkdtemp(), 'reviews.keras')
model.save(path)
restored = keras.models.load_model(path)
assert restored.get_layer(vectorize.name).get_vocabulary() == vectorize.get_vocabulary()
before = model.predict([test_text, test_kind], verbose=0)
after = restored.predict([test_text, test_kind], verbose=0)
assert np.abs(before - after).max() < 1e-5, np.abs(before - after).max()
print(restored.predict([np.array(['A wonderful product, really great!']),
                        np.array(['garden'])], verbose=0))
_, accuracy = restored.evaluate([test_text, test_kind], test_y, verbose=0)
print('RESULT accuracy=%.4f' % accuracy)
