"""Round 26: a job records the command as typed and every option it ran with (``jobs show``),
``--dry-run`` checks any job and starts nothing, and options typed at their default are told
apart from options left out."""

import json
import shlex

import pytest

from skiff.cli import main


def _json_out(capsys):
    out = capsys.readouterr()
    return json.loads(out.out), out.err


def _config(job_doc) -> dict:
    from pathlib import Path

    return json.loads((Path(job_doc["run_dir"]) / "config.json").read_text())


def test_the_listing_shows_the_command_as_typed_and_rerunning_it_makes_the_same_job(capsys):
    """The listing showed the command rendered from the parsed values (``--lr 1e-3`` as
    0.001, the typed defaults gone); re-running what it shows must give the same job."""
    argv = ["train", "mlp", "blobs", "--steps", "2", "--lr", "1e-3", "--seed", "0",
            "--device", "cpu", "--json"]
    assert main(argv) == 0
    first, _ = _json_out(capsys)
    assert first["job"]["command"] == "python -m skiff " + shlex.join(argv)

    assert main(["jobs", "--json"]) == 0
    listed, _ = _json_out(capsys)
    assert [j["command"] for j in listed] == [first["job"]["command"]]
    again = shlex.split(listed[0]["command"])
    assert again[:3] == ["python", "-m", "skiff"]
    assert main(again[3:]) == 0
    second, _ = _json_out(capsys)
    assert second["job"]["id"] != first["job"]["id"]
    assert _config(second["job"])["config"] == _config(first["job"])["config"]
    assert second["result"]["final_loss"] == first["result"]["final_loss"]  # seed 0 both

    # jobs show: the typed command, and every option, the defaults left out included
    assert main(["jobs", "show", first["job"]["id"], "--json"]) == 0
    shown, _ = _json_out(capsys)
    options = shown["options"]
    assert options["lr"] == 1e-3 and options["steps"] == 2 and options["seed"] == 0
    assert options["grad_accum"] == 1 and options["np"] == 1 and options["runner"] == "auto"
    assert options["epochs"] is None  # left out, and recorded as such
    assert main(["jobs", "show", first["job"]["id"]]) == 0
    text = capsys.readouterr().out
    assert f"  command: {first['job']['command']}\n" in text
    assert " grad_accum=1 " in text and " lr=0.001 " in text


def test_a_resolved_device_is_recorded_in_the_options(capsys):
    from skiff.kernels.backend.devices import launch_device

    assert main(["solve", "poisson", "--grid", "16x16", "--json"]) == 0
    doc, _ = _json_out(capsys)
    assert doc["job"]["command"] == "python -m skiff solve poisson --grid 16x16 --json"
    options = _config(doc["job"])["options"]
    assert options["device"] == launch_device("auto", ranks=1) == doc["job"]["device"]
    assert options["grid"] == [16, 16] and options["rtol"] == 1e-8  # the defaults too


@pytest.mark.parametrize("argv, runner, ranks", [
    (["train", "mlp", "blobs", "--steps", "2", "--device", "cpu"], "thread", 1),
    (["solve", "poisson", "--grid", "16x16", "--np", "2", "--oversubscribe"], "process", 2),
])
def test_dry_run_checks_a_job_and_starts_nothing(capsys, runs_dir, argv, runner, ranks):
    """--dry-run was for Slurm only ("give it with --launcher slurm"); it now works for
    every kind: the plan on stdout, no run folder, exit 0."""
    assert main([*argv, "--dry-run", "--json"]) == 0
    doc, _ = _json_out(capsys)
    assert doc["dry_run"] is True and doc["runner"] == runner and doc["np"] == ranks
    assert doc["command"] == "python -m skiff " + shlex.join(argv + ["--json"])
    assert not runs_dir.exists() or not any(runs_dir.iterdir())
    # the config it shows is the one the job runs from
    assert main([*argv, "--json"]) == 0
    ran, _ = _json_out(capsys)
    assert _config(ran["job"])["config"] == doc["config"]
    assert main([*argv, "--dry-run"]) == 0  # text: the same plan, for people
    text = capsys.readouterr().out
    assert text.startswith("dry run: nothing started") and f"command: {doc['command'][:-7]}" \
        in text


def test_dry_run_of_a_bad_job_fails_as_the_job_would(capsys, runs_dir, tmp_path):
    assert main(["solve", "poisson", "--grid", "16x16", "--np", "64", "--dry-run"]) == 2
    assert "more ranks than" in capsys.readouterr().err
    assert main(["ocr", str(tmp_path / "nothing.png"), "--dry-run"]) == 2
    assert "no such file" in capsys.readouterr().err
    assert not runs_dir.exists() or not any(runs_dir.iterdir())


def test_dry_run_reads_ocr_inputs_without_reading_them(capsys, runs_dir, tmp_path):
    from PIL import Image

    Image.new("RGB", (40, 20), "white").save(tmp_path / "a.png")
    assert main(["ocr", str(tmp_path / "a.png"), "--dry-run", "--json"]) == 0
    doc, _ = _json_out(capsys)
    assert doc["config"]["inputs"] == [str(tmp_path / "a.png")] and doc["runner"] == "thread"
    assert not runs_dir.exists() or not any(runs_dir.iterdir())


def test_an_option_typed_at_its_default_is_told_apart_from_one_left_out(capsys):
    """`--nodes 4` without --launcher slurm ran on this machine without a word; now refused,
    typed at its default too, while a panel's values (nothing typed) at the default pass."""
    from skiff.jobs.launch import dry_run

    for nodes in ("4", "1"):
        assert main(["train", "mlp", "--nodes", nodes, "--dry-run"]) == 2
        assert f"--nodes {nodes} is for a cluster" in capsys.readouterr().err
    assert main(["train", "mlp", "--gpus-per-node", "0", "--dry-run"]) == 2
    assert "--gpus-per-node 0 is for a cluster" in capsys.readouterr().err
    from skiff.kinds import KINDS

    values = vars(KINDS["train"].command.parse("mlp"))  # nodes=1 without being typed
    assert dry_run("train", values=dict(values), front="magic")["runner"] == "thread"
    with pytest.raises(ValueError, match="--nodes 3 is for a cluster"):
        dry_run("train", values={**values, "nodes": 3}, front="magic")
    # the ocr-rec options, given to another model, were dropped without a word
    for word in (["--mix", "0.25"], ["--add-chars"], ["--register", "mine"]):
        assert main(["train", "mlp", *word, "--dry-run"]) == 2
        assert f"{word[0]} is for train ocr-rec" in capsys.readouterr().err


def test_given_names_the_options_typed():
    from skiff.kinds import KINDS

    solve = KINDS["solve"].command
    assert solve.given("poisson --grid 256x256 --rtol 1e-8") == {"grid", "rtol"}
    assert solve.given(["poisson"]) == set()
    assert solve.given("poisson --ranks 2") == {"np"}  # an alias, by its dest


def test_render_writes_flags_lists_and_floats_that_parse_back():
    """``--raw`` rendered as "--raw False", ``--stop`` as its list's repr, and a float cut to
    6 digits: parsed back, the line gave other values."""
    from skiff.kinds import KINDS

    gen = KINDS["generate"].command
    values = vars(gen.parse(["ckpt", "hi there", "--raw", "--stop", "a b", "--stop", "c",
                             "--temperature", "0.123456789"]))
    line = gen.render(values, style="cli")
    assert vars(gen.parse(shlex.split(line)[4:])) == values
    solve = KINDS["solve"].command
    values = vars(solve.parse(["poisson", "--rtol", "1.234567891e-9", "--grid", "8x8"]))
    assert vars(solve.parse(shlex.split(solve.render(values, style="cli"))[4:])) == values


@pytest.mark.parametrize("kind", ["train", "solve", "ocr", "chat", "generate"])
def test_every_kinds_help_shows_json_and_dry_run(capsys, kind):
    assert main([kind, "--help"]) == 0
    text = capsys.readouterr().out
    assert "--json" in text and "--dry-run" in text


def test_show_writes_list_options_plainly_and_ocr_counts_in_the_singular(capsys):
    """`inputs="[\\"a.png\\", \\"b.png\\"]"`: a list of options was quoted twice; "1 images
    read, 1 lines of text"."""
    from skiff.kinds import KINDS

    assert main(["solve", "poisson", "--grid", "8x8", "--name", "two words"]) == 0
    capsys.readouterr()
    assert main(["jobs", "show", "two words"]) == 0
    text = capsys.readouterr().out
    assert ' name="two words" ' in text and " grid=8x8 " in text
    from skiff.jobs.render import _option_text

    assert _option_text(["a.png", "b c.png"]) == '["a.png","b c.png"]'
    assert KINDS["ocr"].summary({"images": 1, "lines": 1})[0] == "1 image read, 1 line of text"
    assert KINDS["ocr"].summary({"images": 3, "lines": 0, "errors": 1})[0] == \
        "2 of 3 images read, 0 lines of text (1 could not be read)"


def test_ocr_rec_refuses_the_training_options_it_does_not_read(capsys, tmp_path):
    """`train ocr-rec --lora-r 4 --precision bf16-mixed` trained without LoRA in float32,
    without a word; typed at its default (`--precision 32`) it is refused as well."""
    from PIL import Image

    Image.new("RGB", (40, 20), "white").save(tmp_path / "a.png")
    labels = tmp_path / "labels.txt"
    labels.write_text("a.png\thello\n")
    base = ["train", "ocr-rec", "--data", str(labels), "--dry-run"]
    for words in (["--lora-r", "4"], ["--precision", "32"], ["--strategy", "auto"],
                  ["--early-stop", "2"]):
        assert main([*base, *words]) == 2
        assert f"{words[0]} is not an option of train ocr-rec" in capsys.readouterr().err
    assert main([*base, "--steps", "1", "--mix", "0.3", "--json"]) == 0
    doc, _ = _json_out(capsys)
    assert doc["config"]["mix"] == 0.3 and doc["config"]["steps"] == 1


def test_train_refuses_text_and_lora_options_that_would_be_dropped(capsys):
    """`mlp --block-size 16` and `--lora-targets` without `--lora-r` (typed even at its
    default q_proj,v_proj) trained as if they were not there."""
    for words, needle in ((["mlp", "--block-size", "16"], "'mlp' reads no text"),
                          (["cnn", "--block-size", "8"], "'cnn' reads no text"),
                          (["mlp", "--lora-targets", "q_proj,v_proj"],
                           "--lora-targets needs --lora-r R")):
        assert main(["train", *words, "--dry-run"]) == 2
        assert needle in capsys.readouterr().err
    for words in (["gpt-mini", "--block-size", "16"], ["gpt-moe", "--block-size", "16"],
                  ["gpt-mini", "--lora-r", "2", "--lora-targets", "c_fc"]):
        assert main(["train", *words, "--dry-run", "--json"]) == 0
        doc, _ = _json_out(capsys)
        assert doc["config"]["model"] == words[0]
    assert doc["config"]["lora"] == {"r": 2, "alpha": 4.0, "targets": ["c_fc"]}


def test_generate_refuses_what_its_plain_text_prompt_leaves_out():
    """`generate DIR "text" --system ...` (no chat template: the prompt goes in as it is)
    and `--seed` at temperature 0 (greedy) changed nothing, without a word."""
    from skiff.kinds.chat import to_config

    base = {"model": "ckpt", "prompt": "hi"}
    for extra, needle in (({"system": "be brief"}, "--system goes into the chat template, "
                                                    "which generate leaves out"),
                          ({"no_thinking": True}, "--no-thinking goes into"),
                          ({"system": "x", "use_template": False}, "which --raw leaves out"),
                          ({"seed": 3}, "--seed seeds the sampling")):
        with pytest.raises(ValueError, match=needle):
            to_config({**base, **extra}, chat_default=False, check_folder=False)
    ok = to_config({**base, "system": "x", "use_template": True, "seed": 3,
                    "temperature": 0.7}, chat_default=False, check_folder=False)
    assert ok["chat"] is True and ok["system"] == "x" and ok["seed"] == 3
    assert to_config({**base, "system": "x"}, check_folder=False)["chat"] is True  # chat


def test_ocr_refuses_page_options_for_inputs_without_pages(capsys, tmp_path):
    from PIL import Image

    Image.new("RGB", (40, 20), "white").save(tmp_path / "a.png")
    for name in ("b.pdf", "c.tif"):
        pages = [Image.new("RGB", (120, 40), c) for c in ("white", "gray")]
        pages[0].save(tmp_path / name, save_all=True, append_images=pages[1:])
    png, pdf, tif = (str(tmp_path / n) for n in ("a.png", "b.pdf", "c.tif"))
    for words, needle in (([png, "--pages", "2"], "--pages is for a PDF or TIFF"),
                          ([png, "--pdf-dpi", "200"], "--pdf-dpi is for a PDF"),
                          ([png, tif, "--pdf-dpi", "150"], "(a.png and 1 more)")):
        assert main(["ocr", *words, "--dry-run"]) == 2
        assert needle in capsys.readouterr().err
    for words in ([png, tif, "--pages", "2"], [png, pdf, "--pdf-dpi", "150", "--pages", "1"]):
        assert main(["ocr", *words, "--dry-run", "--json"]) == 0
        doc, _ = _json_out(capsys)
        assert doc["config"]["inputs"] == words[:2]
