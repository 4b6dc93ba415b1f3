"""Fine-tuning a shipped PP-OCR recognizer on a user's own labelled crops.

Above both :mod:`skiff.kernels.train` (the ONNX importer, autograd, CTC loss, optimizers) and
:mod:`skiff.kernels.ocr` (models, preprocessing, decoding), beside neither. :mod:`.labels`
(label files, the dictionary), :mod:`.data` (crops, augmentation, rendered general text),
:mod:`.domain` (rendered seven-segment sets for tests and benchmarks), :mod:`.finetune` (the
loop, export, accuracy), :mod:`.entry` (the ``%train ocr-rec`` job). Submodules import on use.
"""
