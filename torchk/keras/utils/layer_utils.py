"""tf.keras' `warmstart_embedding_matrix`."""
import numpy as np


def _tokens(vocabulary):
    tokens = vocabulary.tolist() if hasattr(vocabulary, 'tolist') else list(vocabulary)
    return [t.decode('utf-8') if isinstance(t, bytes) else t for t in tokens]


def warmstart_embedding_matrix(base_vocabulary, new_vocabulary, base_embeddings,
                               new_embeddings_initializer='uniform'):
    """An embedding matrix for `new_vocabulary`: the rows of `base_embeddings` for the
    tokens `base_vocabulary` has, rows drawn by `new_embeddings_initializer` for the others.

    # Arguments
        base_vocabulary, new_vocabulary: lists (or arrays) of tokens.
        base_embeddings: array `(len(base_vocabulary), dim)`.
        new_embeddings_initializer: a Keras initializer (name, config or instance).

    # Returns
        A float tensor `(len(new_vocabulary), dim)`, of `base_embeddings`' dtype.
    """
    from keras import backend as K
    from keras import initializers

    base = np.asarray(base_embeddings)
    initializer = initializers.get(new_embeddings_initializer)
    matrix = np.array(K.eval(initializer((len(new_vocabulary), base.shape[1]),
                                         dtype=base.dtype.name)))
    base_rows = {token: i for i, token in enumerate(_tokens(base_vocabulary))}
    for i, token in enumerate(_tokens(new_vocabulary)):
        if token in base_rows:
            matrix[i] = base[base_rows[token]]
    return K.constant(matrix, dtype=base.dtype.name)
