"""bench/sleep_scale.py's result file: its "harvest" entry is the harvest measurement only, never a row of the
before/after pair (with `--harvest 0` the pair's first row was written there)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    spec = importlib.util.spec_from_file_location("sleep_scale_bench", ROOT / "bench" / "sleep_scale.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def _run(monkeypatch, tmp_path: Path, harvest: int) -> dict:
    bench = _bench()
    pair = [{"algo": "same 3 files: this", "requests": 3}, {"algo": "same 3 files: baseline", "requests": 3}]
    monkeypatch.setattr(bench, "measure", lambda algo, n, *a, **k: {"algo": algo, "requests": n})
    monkeypatch.setattr(bench, "harvest_pair", lambda *a, **k: [dict(r) for r in pair])
    out = tmp_path / "result.json"
    monkeypatch.setattr(sys, "argv", ["sleep_scale.py", "--sizes", "", "--harvest", str(harvest), "--baseline",
                                      str(tmp_path), "--harvest-baseline", "3", "--out", str(out)])
    bench.main()
    return json.loads(out.read_text())


def test_without_a_harvest_measurement_the_pair_is_not_labelled_harvest(monkeypatch, tmp_path):
    result = _run(monkeypatch, tmp_path, harvest=0)
    assert result["harvest"] is None
    assert [r["algo"] for r in result["harvest_before_after"]] == ["same 3 files: this", "same 3 files: baseline"]


def test_with_a_harvest_measurement_it_is_the_harvest_row(monkeypatch, tmp_path):
    result = _run(monkeypatch, tmp_path, harvest=5)
    assert result["harvest"] == {"algo": "harvest", "requests": 5}
    assert [r["algo"] for r in result["harvest_before_after"]] == ["same 3 files: this", "same 3 files: baseline"]
