"""How to go on with a job that stopped early: the line a terminal summary, ``jobs show``
and the notebook view print under a cancelled or failed job whose kind can resume it
(train from its newest checkpoint, OCR from the pages it read). Said only when the resume
would be taken: a train job that wrote no checkpoint, or a job of notebook objects, gets no
hint (``jobs resume`` would refuse it, naming why)."""

from __future__ import annotations

__all__ = ["resume_hint", "resume_line", "resume_refusal"]

STOPPED = ("cancelled", "failed")


def resume_hint(job, front: str = "cli") -> str | None:
    """``"to go on from where it stopped: python -m skiff jobs resume ID"`` (``front="magic"``:
    ``%jobs resume ID``) for a cancelled or failed job that ``jobs resume`` would take (or an
    OCR job done with images it could not read), else None. Never raises: a hint is not
    worth an error in a summary."""
    try:
        if getattr(job, "status", None) not in STOPPED and not _read_in_part(job):
            return None
        if "cannot resume from" in str(getattr(job, "error", None) or ""):
            return None   # its resume was refused: going on again is refused again
        from skiff.kinds import KINDS, Kind

        kind = KINDS.get(job.kind)
        if kind is None or type(kind).resume_config is Kind.resume_config:
            return None
        from . import _check_checkpoints_there, resume_command

        config = kind.resume_config(job)
        if isinstance(config, dict):
            _check_checkpoints_there(job, config)
        hint = f"to go on from where it stopped: {resume_command(job.id, front)}"
        if job.status == "done":  # an OCR job that could not read some images
            n = int(job.result.get("errors") or 0)
            hint = (f"to read again the {n} image{'' if n == 1 else 's'} it could not "
                    f"(the pages read are kept): {resume_command(job.id, front)}")
        return hint + _same_command(job)
    except Exception:  # noqa: BLE001 - a refused or damaged job: no hint
        return None


def resume_refusal(job) -> str | None:
    """Why ``jobs resume`` of ``job`` would be refused, in its words (a kind that cannot go
    on, a job not ended, nothing to go on from: a solve or an OCR job that ended as asked, a
    training with no checkpoint), or None. Left to the resume itself: a folder whose code is
    not signed with this user's key (its refusal says how to trust it) and another job
    writing the same checkpoints (it changes while a row is shown). The Jobs tab's resume
    button: it was on for a done solve and a done OCR job, and refused after the click
    (round 48)."""
    from . import _going_on_config, _resuming_kind

    try:
        _going_on_config(_resuming_kind(job), job)
    except (ValueError, TypeError, KeyError, OSError) as exc:
        return str(exc.args[0] if isinstance(exc, KeyError) and exc.args else exc)
    return None


def _read_in_part(job) -> bool:
    """An OCR job done with images it could not read (``result["errors"]``): ``jobs resume``
    takes it (the pages read are kept, the others read again), and its summary, ``jobs show
    --json``'s ``resume`` and the view said nothing of it (round 47 h17). A done training
    (as many steps again) or solve is not offered: it ended as asked."""
    if getattr(job, "status", None) != "done" or getattr(job, "kind", None) != "ocr":
        return False
    result = getattr(job, "result", None)
    return isinstance(result, dict) and bool(result.get("errors"))


def _same_command(job) -> str:
    """``", or the same command with --resume"`` (``again`` where it had ``--resume``) for
    an ocr-rec fine-tune that named its folder (``--out DIR`` or ``--checkpoint-dir DIR``,
    where its rec.ckpt is): typed again with ``--resume`` it goes on from there too (as a
    training's line says of ``--resume --checkpoint-dir``); else ``""``."""
    try:
        config = job.config if isinstance(job.config, dict) else {}
        named = config.get("out") or config.get("checkpoint_dir")
        if config.get("model") != "ocr-rec" or not named:
            return ""
        command = str((getattr(job, "meta", None) or {}).get("command") or "")
        if not command or " resume " in f" {command} ":  # `jobs resume ID`: no command
            return ""
        return (", or the same command again" if config.get("resume")
                else ", or the same command with --resume")
    except Exception:  # noqa: BLE001 - an odd record: the hint without it
        return ""


# the kinds whose own line says where a stopped job goes on from, and from what: ``jobs
# resume ID --OPTION VALUE`` runs that line (an OCR job's pages read have no option: it goes
# on with the options it had)
GOES_ON = {"train": "its newest checkpoint", "solve": "its last iterate"}


def resume_line(job_id: str, extra: list[str], front: str = "cli"):
    """``jobs resume ID --lr 0.01`` (round 47: "unrecognized arguments: --lr 0.01"): the
    kind's line that goes on from where the job stopped with ``extra`` changed, as ``(job,
    words, line)``: its options as recorded, ``extra``, and where it goes on from, parsed by
    the kind's grammar (a bad value is its one line); ``words`` follow the kind's name,
    ``line`` is the command as ``front`` types it. The fronts run it. A training goes on from
    its newest checkpoint (``--checkpoint-dir DIR --resume``; ``--steps`` of a finished run
    as many again, as ``jobs resume``), a solve from its last iterate (``--x0
    RUN/partial.npz``, round 47 h11: a solve cancelled, or done without converging).

    None (the fronts say what they said) where ``extra`` holds no option, or one the job's
    kind does not have. A ValueError, one line, where the kind has the option but its line
    cannot go on (an OCR job, an ocr-rec fine-tune, a job of notebook objects: ``jobs resume
    ID`` alone goes on with the options it had), or the kind does not resume at all."""
    from skiff.grammar.common import split_line
    from skiff.kinds import KINDS, Kind

    from . import Job, _check_checkpoints_there, resume_command
    from .listing import one_job

    job = Job.load(one_job(job_id, "resume"), metrics=False)
    kind = KINDS.get(job.kind)
    options = job.meta.get("options")
    model = str(job.config.get("model", ""))
    if kind is None or kind.command is None:
        return None
    parser = kind.command.parser(f"%{job.kind}" if front == "magic" else
                                 f"python -m skiff {job.kind}")
    flags = [w.split("=", 1)[0] for w in extra if w.startswith("-")]
    if not flags or any(f not in parser._option_string_actions for f in flags):
        return None
    typed = " ".join(extra)
    takes = " and ".join(f"{k} (from {w})" for k, w in GOES_ON.items())
    if type(kind).resume_config is Kind.resume_config:
        can = [n for n, k in KINDS.items() if type(k).resume_config is not Kind.resume_config]
        raise ValueError(f"{job.kind} jobs cannot be resumed (job {job.id}): only "
                         f"{', '.join(can[:-1])} and {can[-1]} jobs resume, and {takes} "
                         f"jobs with options changed")
    what = None
    if job.kind not in GOES_ON:
        what = f"an {job.kind} job goes on from the pages it read" if job.kind == "ocr" \
            else f"a {job.kind} job"
    elif model == "ocr-rec":
        what = "an ocr-rec fine-tune goes on from its rec.ckpt"
    elif not isinstance(options, dict) or model.startswith("<") or \
            "<notebook" in str(job.config.get("problem", "")):
        what = "a job of notebook objects has no line to go on with"
    if what is not None:
        if job.refresh().final:
            try:  # where `jobs resume ID` alone is refused too, that is the answer
                kind.resume_config(job)
            except ValueError as exc:
                raise ValueError(f"{exc} (and only {takes} jobs go on with options "
                                 "changed)") from None
        raise ValueError(f"jobs resume {job.id} {typed}: {what}, with the options it had "
                         f"({resume_command(job.id, front)}); only {takes} jobs go on "
                         f"with options changed")
    if not job.refresh().final:
        raise ValueError(f"job {job.id} is still {job.status}: cancel it before resuming")
    job.check_trusted("resume")
    config = kind.resume_config(job)  # its refusals (no checkpoint, ...) are the answer
    from .moved import rebased  # a runs folder moved since: where its files are now

    config = rebased(config, job.run_dir)
    _check_checkpoints_there(job, config)
    if job.kind == "solve" and "x0" not in config:  # round 47 h21: a flow goes on from its
        # kept state (RUN/flow-state.npz); round 48 h7: a cylinder's as `--x0` names it (a
        # longer --t-end, another --device go on; another grid, Re, dt or channel is refused
        # by the cylinder's config, naming the option)
        if config.get("problem") == "cylinder" and config.get("resume_from"):
            config = {**config, "x0": config["resume_from"]}
        else:
            alone = resume_command(job.id, front)
            raise ValueError(f"jobs resume {job.id} {typed}: a {config.get('problem')} run "
                             f"goes on from its kept state with the options it had ({alone});"
                             f" only {takes} jobs, and a cylinder's, go on with options "
                             f"changed")
    drop = ("output", "wait", "resume", "x0", "json", "dry_run")
    values = {k: v for k, v in options.items() if k not in drop}
    for key in ("steps", "epochs"):  # a finished run goes on for as many again (resume's)
        if key in values and config.get(key) is not None:
            values[key] = config[key]
    words = split_line(kind.command.render(values, style="words"))[1:]
    if job.kind == "train":
        words = [*words, *extra, "--checkpoint-dir", str(config["checkpoint_dir"]),
                 "--resume"]
    else:  # its iterate first: an --x0 typed is the one taken
        words = [*words, "--x0", str(config["x0"]), *extra]
    ns = parser.parse_args(words)
    chosen = {k: v for k, v in vars(ns).items()
              if k not in ("output", "wait", "json", "dry_run")}
    words = split_line(kind.command.render(chosen, style="words"))[1:]
    line = kind.command.render(chosen, style="cli" if front == "cli" else "magic")
    return job, words, line
