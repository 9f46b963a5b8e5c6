"""A model folder checked before anything is built from it: every loader (PyTorch, ONNX, the pipeline,
``serve``) calls :func:`check_model_folder`, so a broken folder is one :class:`ModelFormatError` naming the
folder, the file and the problem, never a traceback, a random layer or a 5-token tokenizer.

What is checked, in this order, before any tensor is allocated:

* each file loading reads is a regular file (or a link to one) where present: a folder or FIFO under its name is
  named as such;
* ``config.json``: there (a run's folder holding only ``checkpoints/`` is named as unfinished), a bio_mrc model's
  (a bare encoder's or transformers' QA model's is named as such, with the way to make one), a JSON object; the
  encoder's sizes are integers within :data:`SIZE_LIMITS`, and it is no decoder (``is_decoder``), no decoder-only
  language model (GPT-2, BLOOM) nor an encoder-decoder model; the window settings
  are positive integers and fit the encoder's ``max_position_embeddings``; tuned settings are numbers; the heads'
  settings (``bio_prior``, ``bio_class_weights``, ``bio_loss_reduction``, ``head_dropout``) are of their kinds;
  ``return_dict`` is not turned off; the encoder has no cross-attention and a ``model_type`` transformers knows;
* the run and evaluation records: of the kinds the card reads, no NaN, and no infinity outside a ``threshold``;
* the weights: pickled checkpoints (``pytorch_model.bin``) are refused; ``model.safetensors`` (or each shard
  of its index) has a header that parses and tensors that tile the file exactly (an empty, cut short or
  corrupt file is refused; so is a ``__metadata__`` safetensors cannot read); given the model class, every tensor
  the config implies is there with its shape, saved as floating point numbers where the model's is, and none other
  (built on the ``meta`` device: no memory);
* ``tokenizer.json``: present where required, at most :data:`MAX_TOKENIZER_BYTES`, read by ``tokenizers``
  (whose parser limits nesting), and every token id below the encoder's ``vocab_size``; the other tokenizer
  files parse as JSON objects, ``tokenizer_config.json``'s flags and sides are of their kinds
  (:data:`TOKENIZER_SETTINGS`), and their special tokens are texts of its vocabulary (``cls_token`` and ``sep_token``
  those its post-processor puts in every window, which loading rebuilds the windows from);
* an ONNX export's ``model.onnx``: parses, its external data lies inside the folder, its inputs are
  ``(batch, sequence)`` and its outputs those of the config's heads, and no float initializer holds NaN (nor infinity
  beside values other than 0; a mask holds only zeros and infinities).

One module a job, each importing only those listed before it: :mod:`.files` (file names and kinds),
:mod:`.config_reading`, :mod:`.records`, :mod:`.builds` (builds on the meta device, without weight initialisation),
:mod:`.weights`, :mod:`.encoder_checks`, :mod:`.settings_checks`, :mod:`.tokenizer_checks`, :mod:`.onnx_checks`,
:mod:`.encoder_folder`, :mod:`.qa_files`, :mod:`.backends` and :mod:`.folder_checks` (the entry points above).
Every public name is importable from ``bio_mrc.model_folder`` itself.
"""

from .files import (
    ATOMIC_MODEL_FILES, CARD_FILE, CONVERT_STAGING_DIR, EXPORT_FILE, EXPORT_STAGING_DIR, MODEL_FILE_NAMES, ONNX_FILE,
    PICKLED_WEIGHTS, READ_FILES, RUN_FILE, SAFETENSORS_FILE, SAFETENSORS_INDEX, TOKENIZER_FILE, TOKENIZER_JSON_FILES,
    TRAINING_LOG_FILE, WEIGHT_FILES, check_file_kinds, fail, is_model_temporary, not_a_file, remove_model_temporaries,
    remove_replaced_model_files
)
from .config_reading import (
    BIO_MRC_MODEL_TYPE, MAX_CONFIG_BYTES, foreign_model, is_finite_number, is_plain_int, non_finite_as, read_config,
    read_json_object, saved_config, special_float, special_floats, transformers_float, written_format_problem
)
from .records import check_records, checked_record
from .builds import building_on_meta, meta_build, one_build
from .weights import (
    DTYPE_BYTES, FLOAT_DTYPES, MAX_SAFETENSORS_HEADER, MAX_WEIGHT_MAGNITUDE, Shape, built_on_meta,
    check_floating_weights, check_weights_fit, check_weights_present, expected_shapes, pickled_weight_files,
    safetensors_shapes, weight_shapes
)
from .encoder_checks import (
    BIDIRECTIONAL_CAUSAL_LM_TYPES, BIDIRECTIONAL_ONLY, DTYPES, ENCODER_RATES, SIZE_LIMITS, check_bidirectional,
    check_encoder_classes, check_model_type_named, check_plain_direction, check_plain_sizes, check_reads_both_ways,
    check_sizes, decoder_only
)
from .settings_checks import (
    MAX_SETTING, NOT_FITTED, TAG_LEVELS, TUNED_ON_FIELDS, WINDOW_FIELDS, WINDOW_MINIMUMS, UnusedSettingWarning,
    check_head_settings, check_settings
)
from .tokenizer_checks import (
    FLAG, FLAG_OR_NULL, FRAME_PROBE, MAX_TOKENIZER_BYTES, SPECIAL_TOKEN_KEYS, TEMPLATE_TOKEN_KEYS, TOKENIZER_MISSING,
    TOKENIZER_SETTINGS, check_tokenizer, check_window_frame
)
from .onnx_checks import check_onnx
from .encoder_folder import VOCABULARY_FILES, check_encoder_files, check_encoder_folder
from .qa_files import (
    BIO_MRC_QA_CLASS, QA_HEADS, QA_TOKENIZER_FILES, check_convertible, check_qa_files, qa_architecture,
    qa_model_architecture
)
from .backends import (
    BACKENDS, ExportBesideWeightsWarning, check_pytorch_folder, model_backend, warn_export_beside_weights
)
from .folder_checks import (
    CheckedFolder, check_and_read_model_folder, check_exportable, check_loadable, check_model_dir, check_model_files,
    check_model_folder
)

__all__ = [
    "ATOMIC_MODEL_FILES", "BACKENDS", "BIDIRECTIONAL_CAUSAL_LM_TYPES", "BIDIRECTIONAL_ONLY", "BIO_MRC_MODEL_TYPE",
    "BIO_MRC_QA_CLASS", "CARD_FILE", "CONVERT_STAGING_DIR", "CheckedFolder", "DTYPES", "DTYPE_BYTES", "ENCODER_RATES", "EXPORT_FILE",
    "EXPORT_STAGING_DIR", "ExportBesideWeightsWarning", "FLAG", "FLAG_OR_NULL", "FLOAT_DTYPES", "FRAME_PROBE",
    "MAX_CONFIG_BYTES", "MAX_SAFETENSORS_HEADER", "MAX_SETTING", "MAX_TOKENIZER_BYTES", "MAX_WEIGHT_MAGNITUDE",
    "MODEL_FILE_NAMES", "NOT_FITTED", "ONNX_FILE", "PICKLED_WEIGHTS", "QA_HEADS", "QA_TOKENIZER_FILES", "READ_FILES",
    "RUN_FILE", "SAFETENSORS_FILE", "SAFETENSORS_INDEX", "SIZE_LIMITS", "SPECIAL_TOKEN_KEYS", "Shape", "TAG_LEVELS",
    "TEMPLATE_TOKEN_KEYS", "TOKENIZER_FILE", "TOKENIZER_JSON_FILES", "TOKENIZER_MISSING", "TOKENIZER_SETTINGS",
    "TRAINING_LOG_FILE", "TUNED_ON_FIELDS", "UnusedSettingWarning", "VOCABULARY_FILES", "WEIGHT_FILES", "WINDOW_FIELDS",
    "WINDOW_MINIMUMS", "building_on_meta", "built_on_meta", "check_and_read_model_folder", "check_bidirectional", "check_convertible",
    "check_encoder_classes", "check_encoder_files", "check_encoder_folder", "check_exportable", "check_file_kinds", "check_floating_weights",
    "check_head_settings", "check_loadable", "check_model_dir", "check_model_files", "check_model_folder",
    "check_model_type_named", "check_onnx", "check_plain_direction", "check_plain_sizes", "check_pytorch_folder",
    "check_qa_files", "check_reads_both_ways", "check_records", "check_settings", "check_sizes", "check_tokenizer",
    "check_weights_fit", "check_weights_present", "check_window_frame", "checked_record", "decoder_only",
    "expected_shapes", "fail", "foreign_model", "is_finite_number", "is_model_temporary", "is_plain_int",
    "meta_build", "model_backend", "non_finite_as", "not_a_file", "one_build", "pickled_weight_files", "qa_architecture",
    "qa_model_architecture", "read_config", "read_json_object", "remove_model_temporaries", "remove_replaced_model_files", "safetensors_shapes",
    "saved_config", "special_float", "special_floats", "transformers_float", "warn_export_beside_weights", "weight_shapes",
    "written_format_problem"
]
