"""Scorers: built-in comparisons, python and command verifiers, and their failure modes."""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
import uuid
from pathlib import Path

import pytest

from skillgit.config import ScorerCfg
from skillgit.errors import ConfigError, SkillgitError
from skillgit.scorers import ScorerError, build_scorer, extract_json, last_number, scrubbed_env
from skillgit.textmatch import FEEDBACK_LIMIT, token_f1
from skillgit.types import Item, Score


def score(kind: str, expected, output: str, root: Path = Path("."), **cfg) -> Score:
    return build_scorer(ScorerCfg(type=kind, **cfg), root)(Item("q1", "the task", expected), output)


def scorer_error(kind: str, expected, output: str, root: Path = Path("."), **cfg) -> ScorerError:
    with pytest.raises(ScorerError) as info:
        score(kind, expected, output, root, **cfg)
    assert isinstance(info.value, SkillgitError) and info.value.hint
    return info.value


# ---------------------------------------------------------------------------------------------- built-ins
def test_exact():
    assert score("exact", "5,4,3", "  5,4,3\n") == Score(1.0, 1.0, "correct: matches the expected answer exactly")
    wrong = score("exact", "5,4,3", "5, 4, 3")
    assert wrong.hard == 0.0 and 0.5 < wrong.soft < 1.0
    assert wrong.feedback == "the output departs from the expected answer at character 2: '5, 4, 3'"
    assert score("exact", "Paris", "paris").hard == 0.0
    assert "only in letter case" in score("exact", "Paris", "paris").feedback
    assert score("exact", "Paris", "paris", case_sensitive=False).hard == 1.0
    sentence = score("exact", "the cat sat down", "the cat sat")
    assert sentence.soft == pytest.approx(token_f1("the cat sat", "the cat sat down"))


def test_exact_feedback_shows_where_the_output_departs_and_never_the_expected_text():
    expected = "alpha " * 40 + "omega"
    got = "alpha " * 40 + "delta"
    result = score("exact", expected, got)
    assert "departs from the expected answer at character 240" in result.feedback
    assert "delta" in result.feedback and "omega" not in result.feedback
    assert len(result.feedback) <= FEEDBACK_LIMIT
    assert "then goes on: '… extra'" in score("exact", "short", "short extra").feedback
    assert "stops short" in score("exact", "short answer", "short").feedback
    assert "(the output has 2 lines, the expected answer 1)" in score("exact", "one", "one\ntwo").feedback
    assert score("exact", "x", "  ").feedback == "the output is empty"


def test_normalized():
    assert score("normalized", "Yes.", " yes ").hard == 1.0
    assert score("normalized", "New  York-City", "new york city!").hard == 1.0
    assert score("normalized", "Yes.", "Yes, it matches.").hard == 0.0


def test_contains():
    assert score("contains", "Paris", "The capital is Paris.").hard == 1.0
    miss = score("contains", "Paris", "The capital is paris.")
    assert miss.hard == 0.0 and miss.soft == 0.0  # case-sensitive by default, soft too
    assert score("contains", "Paris", "The capital is paris.", case_sensitive=False).hard == 1.0
    partial = score("contains", "red green blue", "red and blue")
    assert partial.hard == 0.0 and partial.soft == pytest.approx(2 / 3)
    assert partial.feedback == "the output does not contain the expected answer: 2 of its 3 words appear in the output"


def test_regex():
    assert score("regex", r"^\d+$", "123").hard == 1.0  # item's expected is the pattern
    assert score("regex", r"^\d+$", "12a").hard == 0.0
    assert score("regex", None, "answer: B", pattern=r"answer:\s*[A-D]").hard == 1.0
    assert score("regex", "ignored", "nothing", pattern=r"answer").hard == 0.0  # the config pattern wins
    assert score("regex", None, "YES", pattern="yes", case_sensitive=False).hard == 1.0


def test_regex_scorer_errors():
    assert "no `expected` pattern and env.scorer.pattern is not set" in scorer_error("regex", None, "x").message
    assert "not a valid regular expression" in scorer_error("regex", "(", "x").message
    with pytest.raises(ConfigError):
        build_scorer(ScorerCfg(type="regex", pattern="("), Path("."))


def test_numeric():
    assert last_number("It costs $1,234.50, not 12.") == 12.0
    assert last_number("x = -2.5e3") == -2500.0
    assert last_number("none here") is None
    assert score("numeric", "42", "Step 1: 40 + 2.\nAnswer: 42").hard == 1.0
    assert score("numeric", 0.3, "0.30000001", tolerance=1e-6).hard == 1.0
    near = score("numeric", 100, "99")
    assert near.hard == 0.0 and near.soft == pytest.approx(1 / 1.01)
    assert score("numeric", 100, "99", rel_tolerance=0.02).hard == 1.0
    far = score("numeric", 100, "5")
    assert far.soft < near.soft
    none = score("numeric", 42, "I don't know")
    assert (none.hard, none.soft) == (0.0, 0.0) and "no number" in none.feedback


def test_scorers_that_need_expected_say_so():
    for kind in ("exact", "normalized", "contains", "numeric", "f1", "json_field"):
        err = scorer_error(kind, None, "anything")
        assert "item 'q1' has no `expected`" in err.message and kind in err.message
    assert "is not a number" in scorer_error("numeric", "many", "3").message


def test_f1():
    assert score("f1", "the cat sat", "Sat, the cat!").hard == 1.0
    partial = score("f1", "the cat sat", "the dog sat")
    assert partial.hard == 0.0 and partial.soft == pytest.approx(2 / 3)
    assert partial.feedback == ("token F1 0.67; 1 word of the expected answer missing; words of the output that are "
                                "not expected: dog")
    assert score("f1", "the cat sat", "the dog sat", threshold=0.6).hard == 1.0


def test_json_field():
    expected = {"answer": 42, "unit": "m", "ok": True}
    fenced = 'Here you go:\n```json\n{"answer": 42.0, "unit": "M", "ok": true}\n```'
    result = score("json_field", expected, fenced, fields=("answer", "unit"))
    assert result.hard == 0.0 and result.soft == 0.5
    assert result.feedback == '1/2 fields right; wrong value: unit (the output has "M")'
    assert score("json_field", expected, fenced, fields=("answer", "unit"), case_sensitive=False).hard == 1.0
    assert score("json_field", json.dumps(expected), 'blah {"answer": 42, "unit": "m", "ok": true} blah').hard == 1.0
    missing = score("json_field", expected, '{"answer": 42}')
    assert missing.soft == pytest.approx(1 / 3) and "missing: unit, ok" in missing.feedback
    garbage = score("json_field", expected, "no json at all {")
    assert (garbage.hard, garbage.soft) == (0.0, 0.0) and "no JSON object" in garbage.feedback
    nested = score("json_field", {"a": {"b": [1, 2]}}, '{"a": {"b": [1, 3]}}', fields=("a.b.0", "a.b.1"))
    assert nested.soft == 0.5


def test_json_field_item_problems_are_scorer_errors():
    assert "must be a JSON object" in scorer_error("json_field", "not json", "{}").message
    assert "has no field 'x'" in scorer_error("json_field", {"a": 1}, '{"a": 1}', fields=("x",)).message


def test_extract_json_prefers_whole_then_fence_then_first_object():
    assert extract_json('{"a": 1}') == {"a": 1}
    assert extract_json('x ```\n{"a": 1}\n``` y ```json\n{"a": 2}\n```') == {"a": 2}
    assert extract_json('say {"a": 3} and {"a": 4}') == {"a": 3}
    assert extract_json("nothing") is None


def test_alternatives_take_the_best():
    assert score("exact", ["colour", "color"], "color").hard == 1.0
    assert score("numeric", [10, 20], "19").soft > score("numeric", [10], "19").soft
    assert score("regex", [r"^a$", r"^b$"], "b").hard == 1.0


@pytest.mark.parametrize("kind, expected, output, cfg", [
    ("exact", "Zanzibar quokka 7731", "Zanzibar quokka 7", {}),
    ("exact", "Zanzibar quokka 7731", "zanzibar QUOKKA 7731", {}),
    ("normalized", "Zanzibar quokka 7731", "Zanzibar, quokka!", {}),
    ("contains", "Zanzibar quokka 7731", "I think it is Zanzibar", {}),
    ("regex", r"Zanzibar\s+quokka\s+7731", "Zanzibar", {}),
    ("regex", None, "nothing here", {"pattern": r"Zanzibar\s+quokka\s+7731"}),
    ("numeric", 7731, "The answer is 7730", {}),
    ("numeric", 7731, "no idea", {}),
    ("f1", "Zanzibar quokka 7731", "Zanzibar wombat", {}),
    ("json_field", {"place": "Zanzibar", "animal": "quokka", "n": 7731}, '{"place": "Lamu", "n": 1}', {}),
    ("json_field", {"place": "Zanzibar"}, "not json", {}),
])
def test_feedback_says_what_is_wrong_without_the_judges_internals(kind, expected, output, cfg):
    """Issue 20: the teacher reads feedback; it must not carry the expected answer, the pattern or a JSON
    expectation's values (only the output's own words)."""
    result = score(kind, expected, output, **cfg)
    assert result.hard == 0.0 and result.feedback
    secrets = {"quokka", "7731", r"\s+"} - set(output.lower().replace(",", " ").replace("!", " ").split())
    assert not [s for s in secrets if s in result.feedback.lower()], result.feedback


def test_what_the_teacher_may_read_as_expected():
    from skillgit.judging import judge_texts, teacher_reference

    item = Item("q1", "task", r"^\d+$")
    assert teacher_reference(build_scorer(ScorerCfg(type="regex"), Path(".")), item) is None  # a pattern: never
    with_config = build_scorer(ScorerCfg(type="regex", pattern=r"^\d+$"), Path("."))
    assert teacher_reference(with_config, Item("q1", "task", "12")) == "12"
    assert [t.where for t in judge_texts(with_config, [item])] == ["the regex pattern env.scorer.pattern"]
    assert [t.text for t in judge_texts(build_scorer(ScorerCfg(type="regex"), Path(".")), [item])] == [r"^\d+$"]
    assert teacher_reference(build_scorer(ScorerCfg(type="exact"), Path(".")), Item("q1", "t", "42")) == "42"


def test_feedback_is_bounded_for_every_builtin():
    long_output = "word " * 500 + '{"k": "' + "v" * 500 + '"}'
    cases = {"exact": "x" * 1000, "normalized": "y" * 1000, "contains": "z" * 1000, "regex": "q" * 1000,
             "numeric": 123456789, "f1": " ".join(f"w{i}" for i in range(400)), "json_field": {"k": "u" * 900}}
    for kind, expected in cases.items():
        result = score(kind, expected, long_output)
        assert result.hard == 0.0 and 0 < len(result.feedback) <= FEEDBACK_LIMIT, kind


# ---------------------------------------------------------------------------------------------- python
@pytest.fixture
def verifier(tmp_path):
    """Write a verifier module with a unique name into tmp_path; returns 'module' (sys.modules caches by name)."""

    def _write(body: str) -> str:
        name = f"verifier_{uuid.uuid4().hex[:8]}"
        (tmp_path / f"{name}.py").write_text(body, encoding="utf-8")
        return name

    return _write


def test_python_scorer_return_shapes(tmp_path, verifier):
    module = verifier(
        "from skillgit.types import Score\n"
        "def as_score(item, output): return Score(1, 0.5, 'fine')\n"
        "def as_float(item, output): return 0.25\n"
        "def as_bool(item, output): return output == item.expected\n"
        "def as_pair(item, output): return (0, 0.75)\n"
        "def as_triple(item, output): return (1, 1, 'x' * 1000)\n"
        "def as_dict(item, output): return {'hard': 1, 'feedback': 'ok ' + item.id}\n"
    )
    run = lambda fn, out="4": score("python", "4", out, tmp_path, callable=f"{module}:{fn}")  # noqa: E731
    assert run("as_score") == Score(1.0, 0.5, "fine")
    assert run("as_float") == Score(0.25, 0.25, "")
    assert run("as_bool") == Score(1.0, 1.0, "") and run("as_bool", "5") == Score(0.0, 0.0, "")
    assert run("as_pair") == Score(0.0, 0.75, "")
    assert len(run("as_triple").feedback) == FEEDBACK_LIMIT
    assert run("as_dict") == Score(1.0, 1.0, "ok q1")


def test_python_scorer_without_expected_is_fine(tmp_path, verifier):
    module = verifier("def score(item, output): return len(output) < 5\n")
    assert score("python", None, "abc", tmp_path, callable=f"{module}:score").hard == 1.0


def test_python_scorer_that_raises_is_a_scorer_error(tmp_path, verifier):
    module = verifier("def score(item, output):\n    raise ValueError('boom ' + item.id)\n")
    err = scorer_error("python", "x", "y", tmp_path, callable=f"{module}:score")
    assert err.message == f"python scorer {module}:score raised ValueError on item 'q1': boom q1"
    assert not isinstance(err, ValueError)


def test_python_scorer_bad_returns(tmp_path, verifier):
    module = verifier("def none(item, output): return None\n"
                      "def big(item, output): return 7\n"
                      "def nan(item, output): return float('nan')\n"
                      "def text(item, output): return 'pass'\n"
                      "def exits(item, output): raise SystemExit(3)\n")
    assert "returned None" in scorer_error("python", "x", "y", tmp_path, callable=f"{module}:none").message
    assert "from 0 to 1" in scorer_error("python", "x", "y", tmp_path, callable=f"{module}:big").message
    assert "from 0 to 1" in scorer_error("python", "x", "y", tmp_path, callable=f"{module}:nan").message
    assert "returned 'pass'" in scorer_error("python", "x", "y", tmp_path, callable=f"{module}:text").message
    assert "raised SystemExit" in scorer_error("python", "x", "y", tmp_path, callable=f"{module}:exits").message


def test_python_scorer_import_problems_are_config_errors(tmp_path, verifier):
    with pytest.raises(ConfigError, match="no module named 'absent_mod_xyz'"):
        build_scorer(ScorerCfg(type="python", callable="absent_mod_xyz:score"), tmp_path)
    module = verifier("def other(item, output): return 1\n")
    with pytest.raises(ConfigError, match="has no function 'score'"):
        build_scorer(ScorerCfg(type="python", callable=f"{module}:score"), tmp_path)
    broken = verifier("def score(item, output) return 1\n")
    with pytest.raises(ConfigError, match="SyntaxError"):
        build_scorer(ScorerCfg(type="python", callable=f"{broken}:score"), tmp_path)
    with pytest.raises(ConfigError, match="callable"):
        build_scorer(ScorerCfg(type="python"), tmp_path)


# ---------------------------------------------------------------------------------------------- command
PY = shlex.quote(sys.executable)


def script(tmp_path: Path, body: str) -> str:
    path = tmp_path / f"check_{uuid.uuid4().hex[:8]}.py"
    path.write_text(body, encoding="utf-8")
    return f"{PY} {path.name}"  # relative: the command runs in the project root


def test_command_scorer_reads_item_and_output_on_stdin(tmp_path):
    command = script(tmp_path, (
        "import json, sys\n"
        "data = json.load(sys.stdin)\n"
        "print('debug line first')\n"
        "ok = data['output'].strip() == data['item']['expected']\n"
        "print(json.dumps({'hard': int(ok), 'soft': 0.5 + ok / 2, 'feedback': 'saw ' + data['item']['id']}))\n"))
    assert score("command", "42", "42\n", tmp_path, command=command) == Score(1.0, 1.0, "saw q1")
    assert score("command", "42", "41", tmp_path, command=command) == Score(0.0, 0.5, "saw q1")


def test_command_scorer_plain_number_and_cwd(tmp_path):
    (tmp_path / "threshold.txt").write_text("0.75\n")
    assert score("command", None, "x", tmp_path, command="cat threshold.txt") == Score(0.75, 0.75, "")


def test_command_scorer_printing_garbage(tmp_path):
    err = scorer_error("command", "x", "y", tmp_path, command="echo looks good to me")
    assert "printed no score" in err.message and "looks good to me" in err.message
    assert "printed nothing" in scorer_error("command", "x", "y", tmp_path, command="true").message
    assert "from 0 to 1" in scorer_error("command", "x", "y", tmp_path, command="echo 5").message


def test_command_scorer_nonzero_exit(tmp_path):
    err = scorer_error("command", "x", "y", tmp_path, command="echo oops >&2; exit 3")
    assert "exit code 3" in err.message and "oops" in err.message


def _dead(pid: int) -> bool:
    """Gone, or a zombie (killed, waiting for a reaper that may never come in a container)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc to inspect the killed process")
def test_command_scorer_timeout_kills_the_whole_group(tmp_path):
    # The shell starts `sleep` as its child and waits; on timeout both must die, not just the shell.
    command = "sleep 60 & echo $! > sleep.pid; wait"
    err = scorer_error("command", "x", "y", tmp_path, command=command, timeout_s=1.5)
    assert "timed out after 1.5s on item 'q1' and was killed" in err.message
    pid = int((tmp_path / "sleep.pid").read_text())
    deadline = time.monotonic() + 10  # polling for the kernel to finish the kill, not timing our code
    while not _dead(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _dead(pid)


def _seen_by_the_scorer(tmp_path, *names: str) -> str:
    """Which of `names` a command scorer's process has in its environment (comma-separated, sorted)."""
    command = script(tmp_path, (
        "import json, os\n"
        f"names = sorted(n for n in {names!r} if n in os.environ)\n"
        "print(json.dumps({'hard': 1, 'feedback': ','.join(names)}))\n"))
    return score("command", None, "x", tmp_path, command=command).feedback


def test_command_scorer_does_not_see_secrets(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-leak")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://proxy")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "t0k3n")
    monkeypatch.setenv("SKILLGIT_TEST_PLAIN", "visible")
    seen = _seen_by_the_scorer(tmp_path, "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "MY_SERVICE_TOKEN",
                               "SKILLGIT_TEST_PLAIN")
    assert seen == "SKILLGIT_TEST_PLAIN"
    assert os.environ["OPENAI_API_KEY"] == "sk-should-not-leak"  # the parent's environment is untouched


def test_scrubbed_env_rules():
    env = scrubbed_env({"PATH": "/bin", "AWS_SECRET_ACCESS_KEY": "a", "GITHUB_TOKEN": "b", "DB_PASSWORD": "c",
                        "AZURE_OPENAI_ENDPOINT": "d", "OPENAI_BASE_URL": "e", "my_api_key": "f", "HOME": "/h"})
    assert env == {"PATH": "/bin", "HOME": "/h"}


def test_the_command_scorer_does_not_see_a_credential_under_a_plain_name(tmp_path, monkeypatch):
    """A password in a URL, a GitHub token or another variable's secret value copied under a name that does not
    look secret reach no command scorer (the same rule as an agent's environment: `redact.is_secret_value`)."""
    monkeypatch.setenv("DATABASE_URL", "postgres://app:s3cr3t-pa55w0rd-xyz@db.internal:5432/app")
    monkeypatch.setenv("DEPLOY_HELPER", "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-copiedvalue0123456789abcdef")
    monkeypatch.setenv("LAB_COPY", "sk-proj-copiedvalue0123456789abcdef")
    monkeypatch.setenv("SKILLGIT_TEST_PLAIN", "visible")
    seen = _seen_by_the_scorer(tmp_path, "DATABASE_URL", "DEPLOY_HELPER", "LAB_COPY", "SKILLGIT_TEST_PLAIN")
    assert seen == "SKILLGIT_TEST_PLAIN"


def test_command_scorer_needs_a_command(tmp_path):
    with pytest.raises(ConfigError, match="env.scorer.command"):
        build_scorer(ScorerCfg(type="command"), tmp_path)


def test_unknown_type_is_a_config_error():
    with pytest.raises(ConfigError, match="'fuzzy' is not one of"):
        build_scorer(ScorerCfg(type="fuzzy"), Path("."))
