"""skiff's own training framework on ``xp`` (numpy on the CPU, cupy on a GPU).

:mod:`.core` is the tensor/autograd layer (``Tensor``, ``Function``, ``nn``, ``optim``, AMP,
memory estimates). Beside it the trainer layer: :mod:`.trainer` (``Trainer``), its results
and strategies, :mod:`.checkpoint`, :mod:`.data`, :mod:`.entry` (the job entry point);
:mod:`.models`, :mod:`.parallel` (distributed strategies) and :mod:`.plan` (the planner).
Submodules import on use.
"""
