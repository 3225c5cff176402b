"""Notes are untrusted input: they arrive from collaborators through `skillgit pull`, and any line may hold any
JSON. Every reader of notes (`show`, `show --json`, `show --full`, the log, `rejected`, `pr`, `report`, the negative
buffer, the resume check) must tolerate wrong types and say what it skipped.

The property-based test draws whole notes (decision, candidate and gate records whose known fields are either of the
right type or of any other JSON type, nested edits and results included, plus unknown fields) and checks, on a real
repository, that no reader raises and that `show` reports a skipped field exactly when one of the wrong type was
drawn.
"""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skillgit.records import RunProgress
from skillgit.report import render_html
from skillgit.review import data
from skillgit.review import pr as pr_mod
from skillgit.review.show import summary
from skillgit.store import Store, read
from skillgit.store import refs as R
from tests.conftest import git, run_cli_inproc
from tests.test_cli_history import SEED, step


def _write_note(root: Path, commit: str, text: str) -> None:
    subprocess.run(["git", "notes", "--ref", "skillgit", "add", "-f", "-F", "-", commit], cwd=root, input=text,
                   text=True, check=True, capture_output=True)


def _note_of(root: Path, commit: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in git(root, "notes", "--ref", "skillgit", "show", commit).splitlines()
            if line.strip()]


def _repo(root: Path) -> tuple[Store, str, str]:
    """A repository with an accepted step 1 and a rejected step 2 of run r1, and its run ref."""
    git(root, "init", "-q", "-b", "main")
    (root / "SKILL.md").write_text(SEED)
    git(root, "add", "SKILL.md")
    git(root, "commit", "-q", "-m", "initial")
    store = Store.open(root, "SKILL.md")
    step(store, SEED + "Check units.\n", 1, True, 0.5, 0.6)
    step(store, SEED + "Check units.\nShout.\n", 2, False, 0.6, 0.4)
    accepted = git(root, "rev-parse", "main")
    rejected = git(root, "rev-parse", "rejected/r1/0002^{commit}")
    progress = RunProgress(run="r1", config_digest="x", branch="main", seed_rev=git(root, "rev-parse", "main~1"))
    store.save_run("r1", {"progress.json": json.dumps(progress.to_dict())}, "run")
    return store, accepted, rejected


# ---------------------------------------------------------------------------------------------- the defect
def test_show_and_show_json_survive_a_note_whose_apply_is_5(tmp_path):
    """The probe's note: `"apply": 5` on the candidate record made `show` and `show --json` die with a TypeError."""
    root = tmp_path / "repo"
    root.mkdir()
    _, accepted, _ = _repo(root)
    records = _note_of(root, accepted)
    for record in records:
        if record["kind"] == "candidate":
            record["apply"] = 5
    _write_note(root, accepted, "".join(json.dumps(r) + "\n" for r in records))
    for args in (["show", "1"], ["show", "1", "--json"], ["show", "1", "--full"], ["log", "--json"], ["rejected"]):
        proc = run_cli_inproc(*args, cwd=root)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, (args, proc.stderr)
    shown = run_cli_inproc("show", "1", cwd=root).stdout
    assert "note fields of the wrong type skipped: 1" in shown and "candidate.apply: a number 5, not a list" in shown
    detail = json.loads(run_cli_inproc("show", "1", "--json", cwd=root).stdout)
    assert detail["skipped"] == ["candidate.apply: a number 5, not a list"]
    assert detail["outcome"]["verdict"] == "accepted"  # the rest of the note is still read
    assert any(n.get("apply") == 5 for n in detail["notes"])  # `notes` stays the note as written


def test_a_collaborators_parent_field_never_reaches_git_diff_as_an_option(tmp_path):
    """A decision's `parent` feeds `git diff` (pr, report): `--output=FILE` would make git write a file."""
    root = tmp_path / "repo"
    root.mkdir()
    _, accepted, _ = _repo(root)
    target = tmp_path / "written-by-git"
    records = _note_of(root, accepted)
    for record in records:
        if record["kind"] == "decision":
            record["parent"] = f"--output={target}"
    _write_note(root, accepted, "".join(json.dumps(r) + "\n" for r in records))
    git(root, "branch", "review/x", "main")  # a head that is not the base (a run on main has no PR of its own)
    for args in (["pr", "--run", "r1", "--head", "review/x"], ["show", "1"]):
        proc = run_cli_inproc(*args, cwd=root)
        assert proc.returncode == 0, (args, proc.stderr)
    assert not target.exists()
    assert "decision.parent: text" in run_cli_inproc("show", "1", cwd=root).stdout


# ---------------------------------------------------------------------------------------------- the property
HOSTILE = st.sampled_from(["![x](http://tracker.example/p.png)", "<script>alert(1)</script>", "@everyone",
                           "--upload-pack=touch pwned", "a\u202eb", "| ``` |", "NaN", "-1"])
SCALARS = (st.none() | st.booleans() | st.integers(min_value=-10**20, max_value=10**20)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12) | HOSTILE)
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=6)
Pair = Any  # a strategy of (value, has a field of the wrong type)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return (_is_int(v) or isinstance(v, float)) and math.isfinite(v)


def field(valid: st.SearchStrategy, is_valid) -> Pair:
    """Right (or null, which reads as missing), or any JSON value of another type."""
    return st.one_of(valid.map(lambda v: (v, False)), st.none().map(lambda v: (v, False)),
                     JSON.filter(lambda v: v is not None and not is_valid(v)).map(lambda v: (v, True)))


TEXT = field(st.text(max_size=20) | HOSTILE, lambda v: isinstance(v, str))
INT = field(st.integers(min_value=0, max_value=10**6), _is_int)
NUMBER = field(st.floats(allow_nan=False, allow_infinity=False) | st.integers(-5, 5), _is_number)
STEP = field(st.integers(0, 50) | st.sampled_from(["e1-slow-update", "s2-p1", "0003"]),
             lambda v: (_is_int(v) and v >= 0) or (isinstance(v, str) and R.parse_step(v) is not None))
RUN = field(st.sampled_from(["r1", "r2", "nightly.3"]),
            lambda v: isinstance(v, str) and R.parse_run_ref(R.RUNS_PREFIX + v) is not None)


def obj(fields: dict[str, Pair], required: tuple[str, ...] = (), extras: bool = True) -> Pair:
    """An object with some of `fields` (and, with `extras`, unknown keys, which any reader must ignore), or any
    non-object JSON value (wrong). A map (item → value) has no unknown keys: every key is an entry."""
    @st.composite
    def build(draw):
        out, bad = {}, False
        for key, strategy in fields.items():
            if key in required or draw(st.booleans()):
                value, wrong = draw(strategy)
                out[key], bad = value, bad or wrong
        extra = draw(st.dictionaries(st.text(min_size=1, max_size=6).filter(lambda k: k not in fields), JSON,
                                     max_size=2)) if extras else {}
        bad = bad or any(out.get(key) is None for key in required)  # a record without it is skipped, and says so
        return {**out, **extra}, bad

    return st.one_of(build(), JSON.filter(lambda v: v is not None and not isinstance(v, dict)).map(lambda v: (v, True)))


def lst(item: Pair) -> Pair:
    """A list of items (each right or wrong), or any non-list JSON value (wrong)."""
    return st.one_of(st.lists(item, max_size=3).map(lambda items: ([v for v, _ in items], any(b for _, b in items))),
                     JSON.filter(lambda v: v is not None and not isinstance(v, list)).map(lambda v: (v, True)))


EDIT = obj({"op": field(st.sampled_from(["append", "replace", "delete"]), lambda v: isinstance(v, str)),
            "content": TEXT, "target": TEXT, "rationale": TEXT, "support_count": INT, "file": TEXT}, ("op",))
USAGE = obj({"calls": INT, "prompt_tokens": INT, "completion_tokens": INT, "cost_usd": NUMBER,
             "timings_s": obj({"rollout": NUMBER, "update": NUMBER}, extras=False)})
COVERAGE = obj({"scored": INT, "total": INT, "unscored": lst(TEXT)})
PAIR = field(st.tuples(st.floats(0, 1), st.floats(0, 1)).map(list),
             lambda v: isinstance(v, list) and all(x is None or _is_number(x) for x in v))
SCORES = obj({"per_item": obj({"a": PAIR, "b": PAIR}, extras=False),
              "errors": obj({"c": field(st.text(), lambda v: True)})})


def records(parent: str) -> Pair:
    decision = obj({"run": RUN, "step": STEP, "verdict": field(st.sampled_from(["accepted", "rejected"]),
                                                                lambda v: v in ("accepted", "rejected")),
                    "score_before": NUMBER, "score_after": NUMBER, "delta": NUMBER, "p_value": NUMBER,
                    "reason": TEXT, "edits": lst(TEXT), "coverage": COVERAGE, "seq": INT, "epoch": INT,
                    "usage": USAGE, "step_kind": TEXT,
                    "parent": field(st.just(parent), lambda v: isinstance(v, str) and len(v) == 40
                                    and all(c in "0123456789abcdef" for c in v))}, ("verdict",))
    candidate = obj({"run": RUN, "step": STEP, "mode": TEXT, "reasoning": TEXT, "type": TEXT,
                     "apply": lst(obj({"edit": EDIT, "status": TEXT, "reason": TEXT}, ("edit", "status"))),
                     "edits": lst(EDIT), "usage": USAGE, "train": obj({"hard_mean": NUMBER, "soft_mean": NUMBER})})
    gate = obj({"run": RUN, "step": STEP, "metric": field(st.sampled_from(["hard", "soft", "mixed"]),
                                                          lambda v: v in ("hard", "soft", "mixed")),
                "reason": TEXT, "coverage": COVERAGE, "val": SCORES, "base": SCORES})
    kinds = {"decision": decision, "candidate": candidate, "gate": gate}

    @st.composite
    def note(draw):
        out, bad = [], False
        for kind in draw(st.lists(st.sampled_from(sorted(kinds)), min_size=1, max_size=4)):
            value, wrong = draw(kinds[kind])
            if not isinstance(value, dict):  # a line that is not an object: a corrupt line, not a record
                continue
            out.append({**value, "v": 1, "kind": kind})
            bad = bad or wrong
        return out, bad

    return note()


@pytest.fixture(scope="module")
def history_repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("notes") / "repo"
    root.mkdir()
    store, accepted, rejected = _repo(root)
    return root, store, accepted, rejected, git(root, "rev-parse", "main~1")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(drawn=st.data())
def test_every_note_reader_tolerates_any_field_type_and_says_what_it_skipped(history_repo, drawn):
    root, store, accepted, rejected, seed = history_repo
    note, wrong = drawn.draw(records(seed))
    text = "".join(json.dumps(r, allow_nan=True) + "\n" for r in note)
    _write_note(root, accepted, text)
    _write_note(root, rejected, text)

    detail = read.show(store, accepted)
    shown = summary(store, detail, "1")
    json.dumps(detail.to_dict(), default=str)  # `show --json`
    from skillgit.cli.history import _render_record  # `show --full`

    for record in detail.notes:
        _render_record(dict(record))
    # `show` says what it skipped exactly when a field of the wrong type was written
    assert bool(detail.skipped) == wrong, (note, detail.skipped)
    assert ("note fields of the wrong type skipped" in shown) == wrong

    for edits in (True, False):  # `log`, `log --json`, `rejected`
        [e.to_dict() for e in read.history(store, edits=edits)]
    store.negative_buffer(20)  # what the teacher reads
    store.step_record("r1", 1)  # the resume check
    review = data.load_run(store, "r1")  # `pr`, `report`
    body = pr_mod.build(review, base="main", head="review/x", skill_path="SKILL.md").body
    assert "![x](http" not in body and "<script>" not in body
    render_html(data.to_run_report(review, project="p", skill_path="SKILL.md"), "builtin")


def test_a_pulled_gc_archive_with_wrong_types_does_not_break_the_log(tmp_path):
    """The gc archive travels with `push`/`pull` too: its records are read like notes."""
    root = tmp_path / "repo"
    root.mkdir()
    _, _, rejected = _repo(root)
    assert run_cli_inproc("gc", "--keep", "0", cwd=root).returncode == 0
    records = {"r1@0002": {"commit": rejected, "date": "yesterday", "commit_message": 7, "tag_message": ["x"],
                           "parent": {"a": 1}},
               "r1@0009": {"commit": "--output=x"}, "r1@0010": [1, 2]}
    lines = []
    for name, doc in records.items():
        blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=root, input=json.dumps(doc),
                              capture_output=True, text=True, check=True).stdout.strip()
        lines.append(f"100644 blob {blob}\t{name}\n")
    tree = subprocess.run(["git", "mktree"], cwd=root, input="".join(lines), capture_output=True, text=True,
                          check=True).stdout.strip()
    commit = git(root, "commit-tree", tree, "-p", rejected, "-m", "archive from a collaborator")
    git(root, "update-ref", "refs/skillgit/archive", commit)
    for args in (["log"], ["log", "--json"], ["rejected", "--json"], ["show", "rejected/r1/2"]):
        proc = run_cli_inproc(*args, cwd=root)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, (args, proc.stderr)
    listed = json.loads(run_cli_inproc("rejected", "--json", cwd=root).stdout)
    assert [(r["label"], r["archived"]) for r in listed] == [("r1/0002", True)]  # the bad records are skipped
