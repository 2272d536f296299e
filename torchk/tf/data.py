"""`tf.data`: `Dataset` pipelines (`dataset.py`) over in-memory data, Python generators and
files (`data_sources.py`: text lines, TFRecords, CSV)."""
from .data_sources import (CsvDataset, TFRecordDataset, TextLineDataset, list_files,
                           make_csv_dataset)
from .dataset import (AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset,
                      DatasetSpec, TensorSpec)
from .data_options import (AutoShardPolicy, DistributeOptions, Options, OptimizationOptions,
                           ThreadingOptions)
from .namespaces import Namespace, module_getattr

__all__ = ['AUTOTUNE', 'Dataset', 'INFINITE_CARDINALITY', 'UNKNOWN_CARDINALITY', 'experimental',
           'TextLineDataset', 'TFRecordDataset', 'Options', 'ThreadingOptions']

Dataset.list_files = staticmethod(list_files)

experimental = Namespace('tf.data.experimental', {
    'AUTOTUNE': AUTOTUNE, 'INFINITE_CARDINALITY': INFINITE_CARDINALITY,
    'UNKNOWN_CARDINALITY': UNKNOWN_CARDINALITY,
    'cardinality': lambda dataset: dataset.cardinality(),
    'CsvDataset': CsvDataset, 'make_csv_dataset': make_csv_dataset,
    'Counter': Dataset.counter, 'sample_from_datasets': Dataset.sample_from_datasets,
    'AutoShardPolicy': AutoShardPolicy, 'DistributeOptions': DistributeOptions,
    'OptimizationOptions': OptimizationOptions})
__getattr__ = module_getattr('tf.data')
