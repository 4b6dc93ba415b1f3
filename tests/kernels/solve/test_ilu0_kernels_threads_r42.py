"""ILU(0)'s kernels built once while ranks on threads ask for them at once (round 42's CI:
one thread rank saw the table half filled, ``KeyError: 'solve'``, and the row split refused
the solve). The build is held at the moment between its two kernels; a second caller must
wait for both, not read one."""

from __future__ import annotations

import threading

import numba

from skiff.kernels import backend
from skiff.kernels.solve import ilu0


def test_a_second_caller_waits_for_both_kernels(monkeypatch):
    monkeypatch.setattr(ilu0, "_JIT", {})
    monkeypatch.setattr(backend, "numba_available", lambda: True)
    inside, release = threading.Event(), threading.Event()

    def njit(**_):
        def wrap(fn):
            if fn is ilu0._ilu0_solve:   # the first kernel is in; the second is being built
                inside.set()
                release.wait(10)
            return fn
        return wrap

    monkeypatch.setattr(numba, "njit", njit)
    got, errors = {}, []

    def ask(name):
        try:
            got[name] = ilu0._kernels()
        except Exception as e:   # noqa: BLE001 (what the other rank saw)
            errors.append(e)

    first = threading.Thread(target=ask, args=("first",))
    first.start()
    assert inside.wait(10)
    second = threading.Thread(target=ask, args=("second",))
    second.start()
    second.join(1.0)   # before the fix it read the half-filled table here and failed
    release.set()
    first.join(10)
    second.join(10)
    assert not errors, errors
    want = (ilu0._ilu0_factor, ilu0._ilu0_solve)
    assert got["first"] == want and got["second"] == want
