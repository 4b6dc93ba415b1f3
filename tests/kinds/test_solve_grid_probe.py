"""%solve's grid problems and %%solve specs: mistakes said before any job (probe of
2026-12-04; each of these reached the job, or solved something else without a word)."""

import pytest

from skiff.kinds.solve import parse_spec, to_config


def _spec(cell):
    return to_config({"spec": parse_spec(cell)})


@pytest.mark.parametrize("method", ["mg", "fmg"])
def test_convection_with_mg_cycles_is_refused(method):
    with pytest.raises(ValueError, match="diffusion only"):
        to_config({"problem": "convection", "grid": "32x32", "method": method})


def test_convection_with_neumann_everywhere_is_refused():
    with pytest.raises(ValueError, match="Neumann on every side"):
        to_config({"problem": "convection", "grid": "32x32", "bc": "neumann"})
    with pytest.raises(ValueError, match="Neumann on every side"):
        _spec("domain: 32x32\nvelocity: 1,2\nboundaries: neumann")


@pytest.mark.parametrize("cell, match", [
    ("domain: 32x32\nsource: z", "uses z"),
    ("domain: 32x32\nboundaries: x-=dirichlet z", "uses z"),
    ("domain: 32x32\nsource: 1\nsource: 2", "given twice"),
    ("domain: 32x32 foo 3", "expected 'NxN'"),
    ("domain: 32x32 extent 2xq", "extent"),
    ("domain: 32x32 extent -1x1", "extent"),
    ("domain: 32x32 extent 2x1x1", "extent"),
    ("domain: 32x32\nsource: 1j*x", "not a real number"),
    ("domain: 32x32\nsource: 'abc'", "not a real number"),
    ("domain: 32x32\nboundaries: z-=dirichlet 1", "does not exist on a 2D grid"),
    ("domain: 32x32\nboundaries: x-=dirichlet log(y-0.5)", "side x- must be finite"),
    ("domain: 32x32\nboundaries: x-=neumann sqrt(y-0.5)", "side x- must be finite"),
    ("domain: 32x32\nbody: sqrt(x-0.5)", "signed distance must be finite"),
    ("domain: 32x32\nbody: (x-0.5)**2+(y-0.5)**2-0.04; dirichlet log(x-0.5)",
     "Dirichlet value must be finite"),
    ("domain: 32x32\nbody: -1", "no active cell"),
])
def test_spec_mistakes_are_said_before_a_job(cell, match):
    with pytest.raises(ValueError, match=match):
        _spec(cell)


def test_spec_that_is_fine_still_passes():
    cfg = _spec("domain: 16x16x16 extent 2x1x1\nsource: x*y*z\ncoefficient: 1+x")
    assert cfg["extent"] == [2.0, 1.0, 1.0] and cfg["grid"] == [16, 16, 16]
