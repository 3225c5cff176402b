"""Probe 11, terminal output: what a collaborator wrote (notes and run progress, brought by `skillgit pull`)
reaches `log`, `show`, `rejected`, `status` (plain and `--json`) and `report` with no character that acts on a
terminal or reorders what a reader sees.

Holes this closed (each test failed before its fix):
- `textsafe.shown` kept a lone carriage return in multi-line text: a reason `worse\\raccepted` printed as
  `accepted` over the line (log, show, rejected, status all print through it);
- `console.print_json` (every `--json`) wrote C1 controls (U+009B is CSI on a UTF-8 xterm) and bidi overrides
  (U+202E) raw: `json.dumps(ensure_ascii=False)` escapes C0 only;
- the HTML report kept them raw in the page, and matplotlib's "Glyph 27 (…) missing" warnings wrote the raw
  character to stderr.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from skillgit.records import RunProgress
from skillgit.textsafe import shown
from tests.conftest import git, run_cli_inproc
from tests.test_notes_untrusted import _note_of, _repo, _write_note

# What acts on a terminal: NUL, BEL, ESC (CSI/OSC), C1 (U+009B is CSI), bidi override, a carriage return that does
# not end a line.
ACTING = re.compile("[\x00\x07\x1b\x9b\u202e]|\r(?!\n)")
HOSTILE = ("\x1b]8;;http://evil.example/\x07LINK\x1b]8;;\x07\x1b[2J\x1b[31mRED\rOVER\u202eRTL\x00NUL\x9b2J"
           "\u2066ISO\u2069")
KEEP = {"kind", "verdict", "run", "step", "parent", "blob", "metric", "op", "status", "step_kind", "mode", "sha",
        "branch", "config_digest", "seed_rev", "rev"}


def taint(value, suffix: str = HOSTILE, keep=KEEP, key=None):
    """Every free-text string of a record (JSON data) with `suffix` appended, except under the `keep` keys (what a
    reader needs to find the record)."""
    if isinstance(value, str):
        return value if key in keep else value + suffix
    if isinstance(value, list):
        return [taint(v, suffix, keep, key) for v in value]
    if isinstance(value, dict):
        return {k: taint(v, suffix, keep, k) for k, v in value.items()}
    return value


def collaborator(tmp_path: Path) -> tuple[Path, Path, str, str]:
    """(victim, collab, accepted, rejected): a repository with run r1 (`test_notes_untrusted._repo`) and a
    collaborator's clone holding its notes and run ref, to craft what `skillgit pull` then brings."""
    victim = tmp_path / "victim"
    victim.mkdir()
    _, accepted, rejected = _repo(victim)
    collab = tmp_path / "collab"
    git(tmp_path, "clone", "-q", str(victim), str(collab))
    for ref in ("refs/notes/skillgit", "refs/skillgit/runs/r1"):
        git(collab, "fetch", "-q", str(victim), f"{ref}:{ref}")
    return victim, collab, accepted, rejected


def _victim_with_pulled_taint(tmp_path: Path) -> Path:
    """A repository whose run r1 the collaborator's clone annotated with hostile text, brought by `skillgit pull`."""
    victim, collab, accepted, rejected = collaborator(tmp_path)
    for sha in (accepted, rejected):
        records = [taint(r) for r in _note_of(collab, sha)]
        records.append({"v": 1, "kind": "decision", "run": "r1", "step": 1, "verdict": "rejected",
                        "reason": "worse" + HOSTILE, "usage": {"by_stage": {"st" + HOSTILE: {"calls": 1}}}})
        _write_note(collab, sha, "".join(json.dumps(r) + "\n" for r in records))
    progress = RunProgress(run="r2", config_digest="x", branch="main", seed_rev=git(victim, "rev-parse", "main~1"))
    data = taint(progress.to_dict())
    data.update(status="failed", error="boom" + HOSTILE, stage="st" + HOSTILE)
    from skillgit.store import Store

    Store.open(collab, "SKILL.md").save_run("r2", {"progress.json": json.dumps(data)}, "run")
    proc = run_cli_inproc("pull", str(collab), cwd=victim)
    assert proc.returncode == 0, proc.stderr
    assert json.dumps(HOSTILE)[1:-1] in git(victim, "notes", "--ref", "skillgit", "show", accepted)  # it arrived
    return victim


def test_read_commands_print_no_acting_character_from_a_pulled_note_or_progress(tmp_path):
    victim = _victim_with_pulled_taint(tmp_path)
    commands = [["log"], ["log", "--json"], ["show", "1"], ["show", "1", "--full"], ["show", "1", "--json"],
                ["show", "rejected/r1/0002"], ["rejected"], ["rejected", "--json"], ["status"],
                ["status", "--json"], ["status", "--run", "r2"], ["status", "--run", "r2", "--json"]]
    seen = 0
    for args in commands:
        proc = run_cli_inproc(*args, cwd=victim)
        assert proc.returncode in (0, 1), (args, proc.stderr)
        for stream in (proc.stdout, proc.stderr):
            assert not ACTING.search(stream), (args, ACTING.findall(stream), stream[:3000])
            seen += stream.count("LINK")
        if "--json" in args:
            json.loads(proc.stdout)  # still one JSON document
    assert seen >= len(commands) - 2  # the hostile text is shown (escaped), not dropped


def test_json_output_parses_back_to_the_hostile_text(tmp_path):
    """The escapes in `--json` output are JSON's own: a script reads exactly what the note holds."""
    victim = _victim_with_pulled_taint(tmp_path)
    out = run_cli_inproc("show", "1", "--json", cwd=victim).stdout
    assert "\\u202e" in out and "\\u009b" in out
    assert json.dumps(HOSTILE, ensure_ascii=False)[1:-1] in json.dumps(json.loads(out), ensure_ascii=False)


def test_report_page_and_its_warnings_hold_no_acting_character(tmp_path):
    victim = _victim_with_pulled_taint(tmp_path)
    for renderer in ("builtin", "auto"):
        page = tmp_path / f"{renderer}.html"
        argv = [sys.executable, "-m", "skillgit", "report", "r1", "-o", str(page), "--renderer", renderer]
        proc = subprocess.run(argv, cwd=victim, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        assert not ACTING.search(proc.stderr), proc.stderr
        html = page.read_text(encoding="utf-8")
        assert not ACTING.search(html), ACTING.findall(html)[:5]
        assert "\\u202e" in html  # shown, as an escape


def test_shown_escapes_a_lone_carriage_return_and_keeps_line_ends():
    from skillgit.textsafe import json_shown

    assert shown("worse\raccepted") == "worse\\x0daccepted"
    assert shown("a\r\nb\nc\td") == "a\r\nb\nc\td"
    assert shown("a\rb", multiline=False) == "a\\x0db"
    doc = json.dumps({"k": "a\u202eb\x9bc\x85"}, ensure_ascii=False)
    assert json_shown(doc) == '{"k": "a\\u202eb\\u009bc\\u0085"}' and json.loads(json_shown(doc)) == json.loads(doc)


def test_config_values_a_pulled_commit_sets_are_shown_inert(tmp_path):
    """skillgit.yaml is on the skill branch, which `skillgit pull` fast-forwards to a collaborator's commit:
    `config show` (U+202E raw in its YAML), `config show --show-origin`, `doctor` and `train --dry-run` printed a
    model name with ESC and U+202E as written."""
    import yaml

    from tests.helpers import demo_project

    victim = demo_project(tmp_path / "victim")
    collab = tmp_path / "collab"
    git(tmp_path, "clone", "-q", str(victim), str(collab))
    path = collab / "skillgit.yaml"
    cfg = yaml.safe_load(path.read_text(encoding="utf-8"))
    cfg["model"]["teacher_model"] = "sim-teacher" + HOSTILE.replace("\x00", "")
    path.write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    git(collab, "-c", "user.name=c", "-c", "user.email=c@example.invalid", "commit", "-qam", "a model name")
    assert run_cli_inproc("pull", str(collab), cwd=victim).returncode == 0
    for args in (["config", "show"], ["config", "show", "--show-origin"], ["config", "show", "--json"],
                 ["doctor"], ["train", "--dry-run"]):
        proc = run_cli_inproc(*args, cwd=victim)
        for stream in (proc.stdout, proc.stderr):
            assert not ACTING.search(stream), (args, ACTING.findall(stream), stream[:1500])
        assert "sim-teacher" in proc.stdout + proc.stderr, args


def test_an_mcp_tools_answer_carries_no_raw_bidi_or_c1_character_and_parses_to_the_same_data():
    """The MCP tools' answers (`integrations.tools.to_json`) wrote a pulled reason's U+202E and U+009B raw: an agent
    showing the answer showed them acting."""
    from skillgit.integrations.tools import to_json

    data = {"reason": "worse\u202e detpecca", "stage": "gate\x9b2J", "note": "ok — naïve"}
    text = to_json(data)
    assert "\u202e" not in text and "\x9b" not in text and "naïve" in text
    assert json.loads(text) == data
