"""A third-party package that registers an environment and a backend by entry point works in `env list`, `init
--env`, `train`, `eval` and `doctor` through the real CLI, without skillgit changing (issue 26).

The package is written here as a wheel (no build backend needed), pip-installed with `--no-deps --no-index` into
a folder of the test's own, and put on the CLI's PYTHONPATH: exactly how Python finds any installed package's
entry points."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from skillgit.config import SimulatedCfg
from skillgit.world import SimulatedTeacher
from tests.conftest import git, run_cli
from tests.fake_servers import FakeLLMServer, llm_handler

PLUGIN = '''
"""skillgit-env-reverse: reverse a word. An environment (items from a .txt file, one word a line) and a student
backend that reverses words but gets long ones wrong."""
from pathlib import Path

from skillgit.envs.base import Env
from skillgit.llm.base import Reply
from skillgit.llm.registry import Backend
from skillgit.types import Item, Score, Usage


class Reverse(Env):
    name = "reverse"
    summary = "reverse one word"
    metric = "exact match of the reversed word"
    source = "a .txt file, one word a line"
    seed_skill = "# Reversing words\\n\\nReply with the word reversed, nothing else.\\n"

    def load(self, path):
        words = [w.strip() for w in Path(path).read_text().splitlines() if w.strip()]
        return [Item(f"w{i}", f"Reverse: {w}", w[::-1]) for i, w in enumerate(words, start=1)]

    def score(self, item, output):
        ok = output.strip() == item.expected
        return Score(float(ok), float(ok), "correct" if ok else f"the output {output.strip()!r} is not it")


class Reverser:
    id = "reverser:v1"

    def complete(self, request):
        word = request.messages[-1].content.split(":", 1)[-1].strip()
        answer = word[::-1] if len(word) <= 5 else word  # long words: wrong on purpose
        return Reply(answer, Usage(calls=1, prompt_tokens=5, completion_tokens=1), model="reverser")


def build(role, model, backend_cfg, cfg, env, *, secrets, dotenv_keys):
    return Reverser()


def describe(role, model, backend_cfg, env):
    return "in-process word reverser"


BACKEND = Backend("reverser", frozenset({"student"}), build, describe, "reverses short words")
'''

ENTRY_POINTS = """[skillgit.envs]
reverse = sgreverse:Reverse

[skillgit.backends]
reverser = sgreverse:BACKEND
"""


def write_wheel(folder: Path) -> Path:
    dist = "skillgit_env_reverse-0.1.dist-info"
    files = {"sgreverse/__init__.py": PLUGIN,
             f"{dist}/METADATA": "Metadata-Version: 2.1\nName: skillgit-env-reverse\nVersion: 0.1\n",
             f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
             f"{dist}/entry_points.txt": ENTRY_POINTS}
    files[f"{dist}/RECORD"] = "".join(f"{name},,\n" for name in files) + f"{dist}/RECORD,,\n"
    wheel = folder / "skillgit_env_reverse-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return wheel


def teacher_handler():
    """The simulated teacher behind the server; `skillgit doctor`'s JSON health check gets its JSON."""
    teacher = llm_handler(SimulatedTeacher(SimulatedCfg(seed=1)))

    def handle(body: dict) -> str:
        return '{"status": "ok"}' if "health check" in json.dumps(body) else teacher(body)

    return handle


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory) -> str:
    tmp = tmp_path_factory.mktemp("plugin")
    target = tmp / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target",
                           str(target), str(write_wheel(tmp))], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert (target / "skillgit_env_reverse-0.1.dist-info" / "entry_points.txt").is_file()
    return str(target)


@pytest.mark.slow
def test_a_package_adds_an_environment_and_a_backend_by_entry_point(tmp_path, plugin_path):
    env = {"PYTHONPATH": os.pathsep.join([plugin_path, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
           "OPENAI_API_KEY": "sk-test-plugin"}
    listed = run_cli("env", "list", "--json", cwd=tmp_path, env=env)
    assert listed.returncode == 0, listed.stderr
    rows = {r["name"]: r for r in json.loads(listed.stdout)}
    assert rows["reverse"]["origin"] == "skillgit-env-reverse 0.1" and rows["reverse"]["metric"].startswith("exact")
    assert "reverse" not in {r["name"] for r in json.loads(run_cli("env", "list", "--json", cwd=tmp_path).stdout)}

    words = tmp_path / "words.txt"
    words.write_text("\n".join(["cat", "dog", "owl", "horse", "giraffe", "elephant", "ant", "bee", "cow"]) + "\n")
    folder = tmp_path / "proj"
    init = run_cli("init", str(folder), "--env", "reverse", "--data", str(words), cwd=tmp_path, env=env)
    assert init.returncode == 0, init.stderr
    cfg = yaml.safe_load((folder / "skillgit.yaml").read_text())
    assert cfg["env"]["name"] == "reverse" and cfg["env"]["tasks"] == str(words)
    assert (folder / "SKILL.md").read_text().startswith("# Reversing words")

    with FakeLLMServer(teacher_handler()) as server:
        cfg["model"] = {"teacher_backend": "openai", "teacher_model": "sim-teacher",
                        "teacher": {"base_url": server.openai_base_url, "max_retries": 1},
                        "student_backend": "reverser", "student_model": "v1"}
        cfg["train"], cfg["evaluation"] = {"batch_size": 4}, {"gate_repeats": 1, "eval_test": False}
        (folder / "skillgit.yaml").write_text(yaml.safe_dump(cfg))
        git(folder, "add", "-A")
        git(folder, "commit", "-qm", "train on the reverse environment")
        doctor = run_cli("doctor", "--json", cwd=folder, env=env)
        trained = run_cli("train", "--set", "train.max_steps=1", "--json", cwd=folder, env=env)
        evaluated = run_cli("eval", "--split", "test", "--json", cwd=folder, env=env)
        without = run_cli("train", "--set", "train.max_steps=1", cwd=folder, env={"OPENAI_API_KEY": "x"})
        no_env = run_cli("train", "--set", "model.student_backend=openai", cwd=folder, env={"OPENAI_API_KEY": "x"})
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    student = next(r for r in json.loads(doctor.stdout)["roles"] if r["role"] == "student")
    assert student["backend"] == "reverser" and student["endpoint"] == "in-process word reverser"
    checked = json.loads(doctor.stdout)["env"]
    assert checked["env"] == "reverse" and checked["origin"] == "skillgit-env-reverse 0.1" and checked["items"] == 9
    assert trained.returncode == 0, trained.stderr[-3000:]
    assert json.loads(trained.stdout)["steps"] == 1
    assert evaluated.returncode == 0, evaluated.stderr[-2000:]
    items = json.loads(evaluated.stdout)["items"]
    by_word = {row["output"]: row["hard"] for row in items}
    assert by_word and all(hard == (1.0 if len(out) <= 5 else 0.0) for out, hard in by_word.items())
    # without the package, the same project names what is missing and what exists
    assert without.returncode == 2 and "'reverser' is not one of simulated, openai" in without.stderr
    assert no_env.returncode == 2 and "unknown environment 'reverse'" in no_env.stderr
    assert "searchqa, math, docvqa, textgame" in no_env.stderr


def test_env_new_scaffolds_a_package_whose_own_test_passes(tmp_path):
    made = run_cli("env", "new", "my-bench", "--dir", str(tmp_path), cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    root = Path(made.stdout.strip())
    assert root == tmp_path / "skillgit-env-my-bench"
    assert 'my-bench = "skillgit_env_my_bench:Environment"' in (root / "pyproject.toml").read_text()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", "tests"],
                          cwd=root, capture_output=True, text=True, timeout=300,
                          env={**{k: v for k, v in os.environ.items() if k != "PYTEST_DISABLE_PLUGIN_AUTOLOAD"},
                               "PYTHONPATH": str(root)})  # the author's pytest, with its plugins (xdist's -n)
    assert proc.returncode == 0 and "1 passed" in proc.stdout, proc.stdout + proc.stderr
    again = run_cli("env", "new", "my-bench", "--dir", str(tmp_path), cwd=tmp_path)
    assert again.returncode != 0 and "exists already" in again.stderr  # never written over
    taken = run_cli("env", "new", "searchqa", "--dir", str(tmp_path), cwd=tmp_path)
    assert taken.returncode != 0 and "exists already" in taken.stderr
