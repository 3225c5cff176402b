"""`skillgit env new NAME`: a package that adds an environment to skillgit, ready to fill in.

What it writes (in `<dir>/skillgit-env-NAME/`, never over an existing folder): `pyproject.toml` registering the
environment under the `skillgit.envs` entry point group; `skillgit_env_NAME/__init__.py`, an `Env` subclass that
reads JSONL rows (`question`, `answer`) and scores exact match with neutral feedback — the parts to replace with
the benchmark's format and metric are marked; `skillgit_env_NAME/sample.jsonl`, three items; and
`tests/test_env.py`, which loads the sample and checks the metric. `pip install -e <folder>` makes it appear in
`skillgit env list`.
"""

from __future__ import annotations

import re
from pathlib import Path

from skillgit.errors import SkillgitError

_NAME = re.compile(r"[a-z][a-z0-9_-]{0,39}")

PYPROJECT = """[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "skillgit-env-{name}"
version = "0.1.0"
description = "The {name} environment for skillgit"
requires-python = ">=3.10"
dependencies = ["skillgit"]

[project.entry-points."skillgit.envs"]
{name} = "{module}:Environment"

[tool.setuptools]
packages = ["{module}"]

[tool.setuptools.package-data]
"{module}" = ["*.jsonl"]
"""

MODULE = '''"""The {name} environment for skillgit: items from JSONL rows, scored by exact match."""

from __future__ import annotations

from pathlib import Path

from skillgit.envs import rows
from skillgit.envs.base import Env
from skillgit.types import Item, Score


class Environment(Env):
    name = "{name}"
    summary = "{name}: describe the benchmark here"
    metric = "exact match"  # the paper's metric, as reports name it
    source = "where the data comes from, and its format"
    seed_skill = "# {name}\\n\\nReply with the answer only.\\n"
    sample = "sample.jsonl"

    def load(self, path: Path) -> list[Item]:
        # Read the benchmark's published format here.
        def item(row: rows.Row, where: str, item_id: str) -> Item:
            question = rows.field(row, ("question",), where, "question")
            answer = rows.field(row, ("answer",), where, "answer")
            return Item(item_id, str(question), str(answer))

        return rows.items(path, item)

    def score(self, item: Item, output: str) -> Score:
        # The benchmark's metric. Feedback is for the teacher: say what is wrong, never the answer.
        got = (output or "").strip()
        if got.casefold() == str(item.expected).strip().casefold():
            return Score(1.0, 1.0, "correct")
        return Score(0.0, 0.0, f"the answer {{got[:80]!r}} is not the expected one")
'''

SAMPLE = """{"id": "s1", "question": "What is 2 + 2?", "answer": "4"}
{"id": "s2", "question": "What colour is the sky on a clear day?", "answer": "blue"}
{"id": "s3", "question": "How many legs has a spider?", "answer": "8"}
"""

TEST = '''from pathlib import Path

from {module} import Environment


def test_the_sample_loads_and_the_metric_scores_it():
    env = Environment()
    items = env.load(Path(__file__).resolve().parents[1] / "{module}" / "sample.jsonl")
    assert [i.id for i in items] == ["s1", "s2", "s3"]
    assert env.score(items[0], " 4 ").hard == 1.0
    wrong = env.score(items[1], "green")
    assert wrong.hard == 0.0 and "blue" not in wrong.feedback
'''


def new_package(name: str, folder: Path) -> Path:
    """Write the package of environment `name` under `folder`; returns its path."""
    if not _NAME.fullmatch(name):
        raise SkillgitError(f"invalid environment name {name!r}",
                            "use lower-case letters, digits, '-' and '_', starting with a letter")
    from skillgit import envs

    if name in envs.names():
        raise SkillgitError(f"an environment named '{name}' exists already", "pick another name")
    module = "skillgit_env_" + name.replace("-", "_")
    root = Path(folder).expanduser().resolve() / f"skillgit-env-{name}"
    if root.exists():
        raise SkillgitError(f"{root} exists already", "pick another --dir or name; nothing was written")
    (root / module).mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pyproject.toml").write_text(PYPROJECT.format(name=name, module=module), encoding="utf-8")
    (root / module / "__init__.py").write_text(MODULE.format(name=name), encoding="utf-8")
    (root / module / "sample.jsonl").write_text(SAMPLE, encoding="utf-8")
    (root / "tests" / "test_env.py").write_text(TEST.format(module=module), encoding="utf-8")
    return root
