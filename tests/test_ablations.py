"""The ablations the README reports, on a small setting: the negative buffer stops rejected edits from coming
back, and the gate keeps regressions out (bench/ablations.py runs the full table)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def load_ablations():
    spec = importlib.util.spec_from_file_location("ablations", ROOT / "bench" / "ablations.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_buffer_and_gate_ablations_are_measurable():
    ab = load_ablations()
    # The full loop runs on seeds 0 and 1: neither run may apply a repeat or accept a regression. Each ablation
    # runs on seed 0 alone (2 repeats, 6 regressions after 9 steps): its mean over seeds 0 and 1 was positive
    # whenever one seed's was, so seed 1's ablated runs (a third of the test's CPU) could not fail the test.
    result = ab.run_ablations(seeds=2, steps=9, variants={"full": ab.VARIANTS["full"]})["variants"]
    result |= ab.run_ablations(seeds=1, steps=9, variants={k: ab.VARIANTS[k] for k in ("no negative buffer",
                                                                                     "no gate")})["variants"]
    full, no_buffer, no_gate = result["full"], result["no negative buffer"], result["no gate"]
    # with the buffer, no edit rejected earlier in the run is applied again; without it, some are
    assert full["repeated_applied"] == 0
    assert no_buffer["repeated_applied"] > 0
    # with the gate, nothing that made val worse is accepted; without it, regressions get in
    assert full["accepted_regressions"] == 0
    assert no_gate["accepted_regressions"] > 0
    assert full["test_gain"] > 0.3  # training works on this world
    assert "full" in ab.table({"variants": result})
