"""keras-io's text classification from scratch, on a directory of .txt files written here:
text_dataset_from_directory with a validation split, a custom standardization with
tf.strings, TextVectorization adapted on a tf.data map, ds.map(vectorize), a Conv1D model on
the vectorized datasets, then an end-to-end model taking raw strings."""
import os
import re
import string
import tempfile

import numpy as np
import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import layers

keras.utils.set_random_seed(1337)
rng = np.random.RandomState(1337)
good = ['brilliant', 'moving', 'superb', 'delightful', 'gripping', 'magnifique']
bad = ['boring', 'clumsy', 'dreadful', 'tedious', 'messy', 'décevant']
filler = ('the film story actor plot scene camera music it was a and of to this that with '
          'but not very too really quite rather director ending').split()


def review(label):
    if rng.rand() < 0.08:  # a mislabeled review
        label = 1 - label
    words = list(rng.choice(filler, rng.randint(15, 40)))
    for _ in range(rng.randint(3, 7)):
        words.insert(rng.randint(len(words) + 1), rng.choice(good if label else bad))
    if rng.rand() < 0.3:
        words.insert(rng.randint(len(words) + 1), rng.choice(bad if label else good))
    sentences = [' '.join(words[i:i + 9]).capitalize() + '.' for i in range(0, len(words), 9)]
    return '<br /><br />'.join(sentences)


root = tempfile.mkdtemp()
for part, count in (('train', 400), ('test', 150)):
    for label, name in ((0, 'neg'), (1, 'pos')):
        os.makedirs(os.path.join(root, part, name))
        for i in range(count):
            with open(os.path.join(root, part, name, '%d_%d.txt' % (i, label)), 'w',
                      encoding='utf-8') as f:
                f.write(review(label))

batch_size = 32
raw_train_ds = keras.utils.text_dataset_from_directory(
    os.path.join(root, 'train'), batch_size=batch_size, validation_split=0.2,
    subset='training', seed=1337)
raw_val_ds = keras.utils.text_dataset_from_directory(
    os.path.join(root, 'train'), batch_size=batch_size, validation_split=0.2,
    subset='validation', seed=1337)
raw_test_ds = keras.utils.text_dataset_from_directory(os.path.join(root, 'test'),
                                                      batch_size=batch_size)
print('Number of batches in raw_train_ds: %d' % tf.data.experimental.cardinality(raw_train_ds))
for text_batch, label_batch in raw_train_ds.take(1):
    for i in range(2):
        print(text_batch.numpy()[i][:60], label_batch.numpy()[i])


def custom_standardization(input_data):
    lowercase = tf.strings.lower(input_data)
    stripped_html = tf.strings.regex_replace(lowercase, '<br />', ' ')
    return tf.strings.regex_replace(stripped_html, '[%s]' % re.escape(string.punctuation), '')


max_features = 500
embedding_dim = 32
sequence_length = 64
vectorize_layer = layers.TextVectorization(
    standardize=custom_standardization, max_tokens=max_features, output_mode='int',
    output_sequence_length=sequence_length)
text_ds = raw_train_ds.map(lambda x, y: x)
vectorize_layer.adapt(text_ds)


def vectorize_text(text, label):
    text = tf.expand_dims(text, -1)
    return vectorize_layer(text), label


train_ds = raw_train_ds.map(vectorize_text).cache().prefetch(buffer_size=10)
val_ds = raw_val_ds.map(vectorize_text).cache().prefetch(buffer_size=10)
test_ds = raw_test_ds.map(vectorize_text).cache().prefetch(buffer_size=10)

inputs = keras.Input(shape=(None,), dtype='int64')
x = layers.Embedding(max_features, embedding_dim)(inputs)
x = layers.Dropout(0.5)(x)
x = layers.Conv1D(32, 7, padding='valid', activation='relu', strides=3)(x)
x = layers.GlobalMaxPooling1D()(x)
x = layers.Dense(32, activation='relu')(x)
x = layers.Dropout(0.5)(x)
predictions = layers.Dense(1, activation='sigmoid', name='predictions')(x)
model = keras.Model(inputs, predictions)
model.compile(loss='binary_crossentropy', optimizer='adam', metrics=['accuracy'])
model.fit(train_ds, validation_data=val_ds, epochs=10, verbose=0)
print('vectorized test accuracy: %.4f' % model.evaluate(test_ds, verbose=0)[1])

inputs = keras.Input(shape=(1,), dtype='string')
indices = vectorize_layer(inputs)
outputs = model(indices)
end_to_end_model = keras.Model(inputs, outputs)
end_to_end_model.compile(loss='binary_crossentropy', optimizer='adam', metrics=['accuracy'])
print(end_to_end_model.predict(np.array([['A gripping and moving film, superb.'],
                                         ['Boring, tedious and clumsy.']]), verbose=0))
_, accuracy = end_to_end_model.evaluate(raw_test_ds, verbose=0)
print('RESULT accuracy=%.4f' % accuracy)
