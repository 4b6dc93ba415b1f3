"""The grammar shared by magics, panels and ``python -m skiff``: one Command per job kind."""

from .common import (
    Command,
    GrammarError,
    byte_size,
    command,
    device_option,
    grid_shape,
    json_option,
    launch_options,
    positive_float,
    positive_int,
    split_launch,
)

__all__ = [
    "Command",
    "GrammarError",
    "byte_size",
    "command",
    "device_option",
    "grid_shape",
    "json_option",
    "launch_options",
    "positive_float",
    "positive_int",
    "split_launch",
]
