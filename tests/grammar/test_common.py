import pytest

from skiff.grammar import (
    GrammarError,
    byte_size,
    command,
    device_option,
    grid_shape,
    launch_options,
    positive_float,
    split_launch,
)


@command("toy", help="A toy command for the tests.")
@launch_options
@device_option
def TOY(p):
    p.add_argument("problem", choices=("poisson", "heat"))
    p.add_argument("--grid", type=grid_shape, default=(64, 64))
    p.add_argument("--rtol", type=positive_float, default=1e-8)
    p.add_argument("--verbose", action="store_true")


def test_parse_with_shared_groups():
    ns = TOY.parse("heat --grid 32x16 --rtol 1e-6 --np 2 --wait -o sol --device cpu")
    config, launch = split_launch(ns)
    assert config == {"problem": "heat", "grid": (32, 16), "rtol": 1e-6, "verbose": False,
                      "device": "cpu"}
    assert launch == {"np": 2, "runner": "auto", "wait": True, "output": "sol",
                      "oversubscribe": False, "name": None}


@pytest.mark.parametrize(
    "line, needle",
    [
        ("", "required: problem"),
        ("wave", "invalid choice: 'wave'"),
        ("heat --bogus 1", "unrecognized arguments: --bogus"),
        ("heat --grid 3xq", "expected a grid like 256x256"),
        ("heat --rtol -1", "expected a positive number, got '-1'"),
        ("heat --np 0", "expected a positive integer, got '0'"),
        ("heat --device tpu", "unknown device 'tpu'"),
        ("heat --device cuda:7", "no device 'cuda:7'"),
        ("heat 'unclosed", "cannot split the line"),
    ],
)
def test_bad_input_is_one_line(line, needle):
    with pytest.raises(GrammarError) as err:
        TOY.parse(line)
    message = str(err.value)
    assert needle in message
    assert "\n" not in message.strip()


def test_render_round_trips_through_parse():
    values = vars(TOY.parse("heat --grid 32x16 --rtol 1e-06 --verbose --np 2"))
    line = TOY.render(values)
    assert line.startswith("%toy heat")
    assert TOY.render(values, style="cli").startswith("python -m skiff toy heat")
    again = vars(TOY.parse(line.removeprefix("%toy ")))
    assert again == values


def test_render_skips_defaults():
    assert TOY.render(TOY.defaults() | {"problem": "poisson"}) == "%toy poisson"


def test_usage_lists_shared_options():
    text = TOY.usage()
    for flag in ("--device", "--np", "--wait", "--output", "--grid"):
        assert flag in text


@pytest.mark.parametrize("text, expected", [("80GB", 80 * 10**9), ("16GiB", 16 * 2**30),
                                            ("512mb", 512 * 10**6), ("1024b", 1024),
                                            ("1073741824", 2**30)])
def test_byte_sizes(text, expected):
    assert byte_size(text) == expected


def test_bad_byte_size():
    import argparse

    with pytest.raises(argparse.ArgumentTypeError, match="got '80 parsecs'"):
        byte_size("80 parsecs")
    # a plain number under a MiB is no memory size anyone means: the unit was left out
    with pytest.raises(argparse.ArgumentTypeError, match="'80' would be 80 bytes: give the "
                                                         "unit, like 80GB"):
        byte_size("80")


def test_grid_shape_limits():
    import argparse

    assert grid_shape("8x8x8") == (8, 8, 8)
    with pytest.raises(argparse.ArgumentTypeError):
        grid_shape("1x8")
    with pytest.raises(argparse.ArgumentTypeError):
        grid_shape("2x2x2x2")


@pytest.mark.parametrize("bad", ["", "a" * 65, "two\nlines"])
def test_a_job_name_is_one_printable_line(bad):
    with pytest.raises(GrammarError, match="expected a name of 1 to 64 printable characters"):
        TOY.parse(["heat", "--name", bad])
    assert split_launch(TOY.parse(["heat", "--name", "my run"]))[1]["name"] == "my run"
