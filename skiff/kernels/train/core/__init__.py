"""The autograd core of skiff's training framework, on ``xp`` (numpy or cupy).

:mod:`.tensor` (``Tensor``, creation functions, ``no_grad``), :mod:`.autograd` (``Function``
nodes, the backward engine), :mod:`.ops_math` and :mod:`.ops_shape` (the ops), :mod:`.nn`
(modules and ``nn.functional``), :mod:`.optim`, :mod:`.amp` (mixed precision, loss scaling),
:mod:`.memory` (saved-activation estimates), :mod:`.packed_attention`, :mod:`.random`,
:mod:`.gradcheck`. Nothing here imports the trainer layer beside it (one lazy exception:
``nn.Module.load_state_dict`` reads a checkpoint file through :mod:`..checkpoint`).
Submodules import on use.
"""
