"""Probe 11, resource abuse: JSON nested deeper than the parser's stack (`[[[[…` 200,000 deep) in what arrives from
outside. `json.loads` raises RecursionError for it, which no `except ValueError` caught: one such line in a note a
collaborator pushed made every read command (log, show, rejected, status, pr, report) end in a traceback until
the note was removed by hand; a run record the same; a transcript line stopped `sleep harvest`; a model's reply
stopped the step instead of being recorded as malformed. Now it is a malformed line like any other (skipped and
said, or a clear error naming the record), and `show --full` prints a record nested too deep for its YAML writer
as JSON.
"""

from __future__ import annotations

import json

from skillgit.llm.jsonout import extract_json
from skillgit.records import RunProgress
from skillgit.store import Store
from tests.conftest import git, run_cli_inproc
from tests.test_notes_untrusted import _note_of, _write_note
from tests.test_probe11_terminal import collaborator
from tests.test_sleep_harvest import ClaudeSession

BOMB = "[" * 200_000 + "]" * 200_000  # too deep for json.loads
DEEP = "[" * 900 + "]" * 900  # parses, too deep for PyYAML's writer


def test_a_pulled_note_or_run_record_nested_too_deep_is_skipped_or_named_never_a_traceback(tmp_path):
    victim, collab, accepted, _ = collaborator(tmp_path)
    lines = [json.dumps(r) for r in _note_of(collab, accepted)]
    lines.append('{"v": 1, "kind": "gate", "run": "r1", "step": 1, "reason": ' + BOMB + "}")
    lines.append('{"v": 1, "kind": "reflect", "run": "r1", "step": 1, "deep": ' + DEEP + "}")
    _write_note(collab, accepted, "\n".join(lines) + "\n")
    progress = RunProgress(run="r2", config_digest="x", branch="main", seed_rev=git(victim, "rev-parse", "main~1"))
    bomb_progress = json.dumps(progress.to_dict())[:-1] + ', "last": ' + BOMB + "}"
    Store.open(collab, "SKILL.md").save_run("r2", {"progress.json": bomb_progress}, "run")
    assert run_cli_inproc("pull", str(collab), cwd=victim).returncode == 0
    git(victim, "branch", "review/x", "main")  # a head that is not the base (a run on main has no PR of its own)

    for args in (["log"], ["log", "--json"], ["show", "1"], ["show", "1", "--json"], ["show", "1", "--full"],
                 ["rejected"], ["status", "--run", "r1"], ["pr", "--run", "r1", "--head", "review/x"],
                 ["report", "r1", "-o", str(tmp_path / "r.html"), "--renderer", "builtin"]):
        proc = run_cli_inproc(*args, cwd=victim)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, (args, proc.stderr[-2000:])
    assert "corrupt note line(s) skipped" in run_cli_inproc("show", "1", cwd=victim).stdout
    assert "[[[[" in run_cli_inproc("show", "1", "--full", cwd=victim).stdout  # the 900-deep record, as JSON
    for args in (["status", "--run", "r2"], ["status", "--run", "r2", "--json"], ["pr", "--run", "r2"]):
        proc = run_cli_inproc(*args, cwd=victim)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, (args, proc.stderr[-2000:])
        assert "run 'r2' has an unreadable progress record" in proc.stderr


def test_a_pulled_run_config_nested_too_deep_reads_as_unreadable(tmp_path):
    """A run's saved config.yaml (`pr`, `report` and `show` read its metric): YAML nested 5,000 deep made PyYAML's
    composer raise RecursionError past `except yaml.YAMLError`."""
    victim, collab, _, _ = collaborator(tmp_path)
    store = Store.open(collab, "SKILL.md")
    files = dict(store.load_run("r1") or {})
    store.save_run("r1", {**files, "config.yaml": "evaluation: " + "[" * 5000 + "]" * 5000 + "\n"}, "run")
    assert run_cli_inproc("pull", str(collab), cwd=victim).returncode == 0
    assert "[[[[" in git(victim, "show", "refs/skillgit/runs/r1:config.yaml")[:100]
    git(victim, "branch", "review/x", "main")  # a head that is not the base (a run on main has no PR of its own)
    for args in (["pr", "--run", "r1", "--head", "review/x"], ["show", "1"],
                 ["report", "r1", "-o", str(tmp_path / "r.html"), "--renderer", "builtin"]):
        proc = run_cli_inproc(*args, cwd=victim)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, (args, proc.stderr[-2000:])


def test_a_transcript_line_nested_too_deep_is_a_malformed_line(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    home = tmp_path / "home"
    session = ClaudeSession("deep-1", repo).user("Normalise this record: code ab-12").say("AB-12")
    path = session.write(home)
    with path.open("a", encoding="utf-8") as fh:
        fh.write('{"type": "user", "message": ' + BOMB + "}\n")
    proc = run_cli_inproc("sleep", "harvest", "--json", "--home", str(home), cwd=repo)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert [json.loads(line)["session"] for line in proc.stdout.splitlines()] == ["deep-1"]


def test_a_model_reply_nested_too_deep_is_malformed_output():
    obj, why = extract_json('{"edits": ' + BOMB + "}")
    assert obj is None and why and "recursion" in why.lower()


def test_redacting_a_line_that_repeats_an_assignment_is_linear(monkeypatch):
    """`api_key=` repeated: each occurrence's bare value matched to the end of the line and was checked there
    (240 KB took over three minutes). The work is counted, not timed: the characters the detectors' matches
    span grow with the text (they grew with its square). A bare value longer than the 1,024 characters the
    pattern reads is still masked whole."""
    from skillgit import secret_scan
    from skillgit.redact import redact

    spanned = [0]
    original = secret_scan._Hits.run

    def counting(self, det, at, matches):
        found = [m for m in matches]
        spanned[0] += sum(m.end() - m.start() for m in found if m is not None)
        return original(self, det, at, found)

    monkeypatch.setattr(secret_scan._Hits, "run", counting)
    for unit in ("api_key=", "my_key="):
        work = []
        for n in (1500, 3000):
            spanned[0] = 0
            out = redact(unit * n)
            work.append(spanned[0])
            assert redact(out) == out
        assert work[1] < 2.5 * work[0], (unit, work)  # twice the text, twice the work (it was four times)
    assert redact("api_key=" * 3000) == "api_key=***"
    long_value = "Zx9Qw" * 400  # 2,000 characters
    assert redact(f"api_key={long_value} done") == "api_key=*** done"


def test_a_reply_that_repeats_an_unclosed_think_tag_parses_in_linear_time():
    """A model stuck repeating `<think>` (local models do): the regex that drops thinking blocks scanned to the end
    for every unclosed tag (140 KB: 13 s of CPU; 1 MB: about 11 minutes). The bound is a CPU budget the child
    process cannot exceed (RLIMIT_CPU, 120 s: ~170 times what the linear code needs), not a measured time; and
    the blocks removed are exactly those the regex removed."""
    import random
    import re
    import subprocess
    import sys

    from skillgit.llm.jsonout import _without_thinking

    old = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)
    rng = random.Random(11)
    parts = ["<think>", "</think>", "<THINKING>", "</thinking>", "<reasoning>", "</Reasoning>", "a", "{", "}",
             "<think", "x>", "\n", "İ", "</THİNK>"]
    for _ in range(5000):
        text = "".join(rng.choice(parts) for _ in range(rng.randint(0, 12)))
        assert _without_thinking(text) == old.sub("", text), repr(text)
    code = ("import resource; resource.setrlimit(resource.RLIMIT_CPU, (120, 120)); "
            "from skillgit.llm.jsonout import extract_json; "
            "print(extract_json('<think>' * 150_000 + '{\"ok\": 1}'))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0 and "{'ok': 1}" in proc.stdout, (proc.returncode, proc.stderr[-500:])
