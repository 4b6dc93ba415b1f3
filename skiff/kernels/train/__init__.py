"""skiff's own training framework on ``xp`` (numpy on the CPU, cupy on a GPU).

Core (this package's tensor/autograd layer): :mod:`.tensor` (``Tensor``, creation functions,
``no_grad``), :mod:`.autograd` (``Function`` nodes, the backward engine), :mod:`.nn` (modules
and ``nn.functional``), :mod:`.optim`, :mod:`.amp`, :mod:`.memory`, :mod:`.gradcheck`.
Trainer, data, models and the distributed parts live beside them. Submodules import on use.
"""
