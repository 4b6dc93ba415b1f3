"""``python -m skiff ARGS`` run in the test's own process (round 47, h2: one helper for the
four test files of ``tests/kinds`` that each defined their own). A subprocess each paid the
interpreter's, numpy's, scipy's (and torch's) imports again: round 46 moved those files'
launches in-process, each with its own copy of this runner."""

from __future__ import annotations

from types import SimpleNamespace


def run_cli(capsys, *args) -> SimpleNamespace:
    """``skiff.cli.main(ARGS)`` as ``python -m skiff ARGS`` runs it (``skiff.__main__`` is
    ``sys.exit(main())``): its exit status (the grammar's own ``SystemExit`` too, as the process
    would have it) and what it printed, ``returncode``, ``stdout`` and ``stderr`` as
    ``subprocess.run`` gives them. What was printed before the call is dropped."""
    from skiff.cli import main

    capsys.readouterr()
    try:
        status = main([str(a) for a in args])
    except SystemExit as exc:
        status = exc.code
    out = capsys.readouterr()
    return SimpleNamespace(returncode=status, stdout=out.out, stderr=out.err)
