"""The grammar machinery shared by magics, panels and ``python -m skiff``: :class:`Command`,
the shared option groups and value types. Each job kind declares its own Command in
:mod:`skiff.kinds`; the tools (jobs, devices, plan) declare theirs here."""

from .common import (
    USER_ERRORS,
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
    user_message,
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
    "user_message",
    "USER_ERRORS",
]
