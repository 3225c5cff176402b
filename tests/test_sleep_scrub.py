"""skillgit.sleep.scrub: secrets, e-mail addresses, home paths and custom patterns are masked and counted, and no
planted secret survives harvest, mining or the written task file."""

from __future__ import annotations

import json

import pytest

from skillgit.errors import ConfigError
from skillgit.sleep import HarvestState, Redactions, build_scrubber, harvest, mine, read_tasks, write_tasks
from skillgit.sleep.scrub import Scrubber
from tests.test_sleep_harvest import ClaudeSession, make_repo

OPENAI_KEY = "sk-proj-" + "Zq8x" * 8  # built at run time: no key-shaped literal sits in the repository
DOTENV_VALUE = "dotenv-" + "s3cr3t" * 3
NAMED_VALUE = "hook-" + "7f3a9c" * 3
EMAIL = "alice.martin@" + "example.org"
HOME = "/home/" + "alice"


def test_each_category_is_masked_and_counted():
    s = build_scrubber(secrets=[DOTENV_VALUE], patterns=[r"TICKET-\d+"], environ={})
    text = (f"key {OPENAI_KEY} and {DOTENV_VALUE}; mail {EMAIL}; see {HOME}/proj/a.py, /Users/bob/x, "
            f"C:\\Users\\Carol Ann\\repo\\b.py and /root/.cache; TICKET-4711; remote git@github.com:o/r.git")
    out, counts = s.scrub(text)
    for secret in (OPENAI_KEY, DOTENV_VALUE, EMAIL, "alice", "bob", "Carol", "/root/", "TICKET-4711"):
        assert secret not in out
    assert "~/proj/a.py" in out and "~/x" in out and "~/repo\\b.py" in out and "~/.cache" in out
    assert "git@github.com:o/r.git" in out  # an SSH remote is not an address
    assert counts == Redactions(secrets=2, emails=1, home_paths=4, custom=1)
    assert s.scrub(out) == (out, Redactions())  # idempotent: nothing left to mask


def test_home_path_forms():
    s = Scrubber()
    assert s.text("/home/alice") == "~" and s.text("cwd=/home/alice/") == "cwd=~/"
    assert s.text("file:///Users/bob/p") == "file://~/p"
    assert s.text('"C:\\\\Users\\\\dev\\\\p"') == '"~/p"'  # JSON-escaped Windows path
    assert s.text("/srv/home/x/y and /data/Users/z/") == "/srv/home/x/y and /data/Users/z/"


def test_dotenv_values_and_named_variables_are_secrets(tmp_path, monkeypatch):
    (tmp_path / ".env").write_text(f"DB_URL='{DOTENV_VALUE}'\nSHORT=abc\n# COMMENTED={NAMED_VALUE}x\n")
    monkeypatch.setenv("DEPLOY_HOOK_URL", NAMED_VALUE)  # the name holds no KEY/TOKEN/SECRET: only naming it helps
    plain = build_scrubber(tmp_path)
    assert NAMED_VALUE in plain.text(NAMED_VALUE) and DOTENV_VALUE not in plain.text(DOTENV_VALUE)
    named = build_scrubber(tmp_path, env_names=["DEPLOY_HOOK_URL", "NOT_SET_ANYWHERE"])
    assert named.text(f"{NAMED_VALUE} {DOTENV_VALUE} abc") == "*** *** abc"


def test_a_bad_pattern_names_itself():
    with pytest.raises(ConfigError, match=r"'\(unclosed'"):
        build_scrubber(patterns=["(unclosed"])


def test_planted_secrets_never_leave_harvest_mining_or_the_task_file(tmp_path, monkeypatch):
    repo = make_repo(tmp_path / "repo")
    (repo / ".env").write_text(f"DATABASE_PASSWORD={DOTENV_VALUE}\n")
    monkeypatch.setenv("DEPLOY_HOOK_URL", NAMED_VALUE)
    home = tmp_path / "home"
    for n, ask in enumerate([f"fix the date parsing test; I'm {EMAIL}, my key {OPENAI_KEY} is in {HOME}/keys.txt",
                             f"date parsing test fails again, use key {OPENAI_KEY}, mail {EMAIL} if stuck"]):
        (ClaudeSession(f"p{n}", repo, day=f"2025-10-0{n + 3}").user(ask)
         .bash(f"pytest {HOME}/repo/tests/test_dates.py", f"E  DSN postgres://app:{DOTENV_VALUE}@db\n1 failed in 0.1s",
               is_error=True)
         .edit("src/dateparse/core.py")
         .bash(f"pytest {HOME}/repo/tests/test_dates.py", f"posted to {NAMED_VALUE}\n1 passed in 0.1s")
         .say(f"Fixed; your key {OPENAI_KEY} was not needed.").write(home))
    scrubber = build_scrubber(repo, env_names=["DEPLOY_HOOK_URL"])

    result = harvest(["claude"], home, repo, [], HarvestState(), scrubber=scrubber)
    mined = mine(result.sessions, first_new_turn=result.first_new_turn, scrubber=scrubber)
    assert len(mined.tasks) == 1
    out = write_tasks(tmp_path / "mined.jsonl", mined.tasks, scrubber=scrubber)
    texts = {
        "harvest": json.dumps(result.to_dict()),
        "units": json.dumps([u.to_dict() for u in mined.units]),
        "tasks": json.dumps([t.to_row() for t in mined.tasks]),
        "file": out.read_text(),
        "state": result.state.to_json(),
    }
    for where, text in texts.items():
        for planted in (OPENAI_KEY, DOTENV_VALUE, NAMED_VALUE, EMAIL, HOME):
            assert planted not in text, f"{planted!r} leaked into {where}"
    assert result.redactions.secrets >= 8 and result.redactions.emails == 2 and result.redactions.home_paths >= 5
    task = read_tasks(out).tasks[0]
    assert task.verify["command"] == "pytest ~/repo/tests/test_dates.py"
    assert "<email>" in task.prompt and "sk-***" in task.prompt


def test_a_session_is_scrubbed_with_its_secret_values_resolved_once_and_masks_what_each_string_would(monkeypatch):
    # the fast path (scrub_session resolves the secret values once per session, not once per string) masks exactly
    # what scrubbing each field alone masks, a credential-named variable set after the scrubber was built included
    from skillgit.sleep.model import Session, ToolCall, ToolResult, Turn

    s = build_scrubber(secrets=[DOTENV_VALUE], environ={})
    late = "late-" + "9d8c7b" * 3
    monkeypatch.setenv("SLEEP_LATE_TOKEN", late)
    texts = (f"use {late} and {DOTENV_VALUE}", f"curl -H 'Authorization: Bearer {late}' {HOME}/x",
             f"mail {EMAIL} {OPENAI_KEY}", f"{HOME}/repo/.env", "nothing to see")
    session = Session("claude", "s1", cwd=f"{HOME}/repo", turns=(
        Turn("user", texts[0]),
        Turn("assistant", texts[2], tool_calls=(ToolCall("Bash", texts[1], texts[1], (texts[3],)),),
             tool_results=(ToolResult(texts[4]),)),
    ))
    clean, counts = s.scrub_session(session)
    alone = [s.scrub(t) for t in (texts[0], texts[2], texts[1], texts[1], texts[3], texts[4], f"{HOME}/repo")]
    assert counts == sum((c for _, c in alone), Redactions()) and counts.secrets >= 5
    flat = json.dumps(clean.to_dict())
    for secret in (late, DOTENV_VALUE, OPENAI_KEY, EMAIL, HOME):
        assert secret not in flat
    assert clean.turns[0].text == alone[0][0] and clean.turns[1].tool_calls[0].command == alone[2][0]


def test_a_string_the_memo_holds_as_clean_is_masked_once_a_secret_value_appears_in_it(monkeypatch):
    # a short string nothing was masked in is answered from the scrubber's memo (its very object, no copy), but only
    # for the secret values it was scrubbed with: once a credential-named variable holds a value in it, it is masked
    from skillgit.sleep.model import Session, ToolCall, Turn

    value = "later-" + "4f3e2d" * 3
    command = f"deploy --name {value}"
    call = ToolCall("Bash", command, command, (f"/tmp/{value}/out.txt",), False, "c1")
    session = Session("claude", "s1", turns=(Turn("user", "ship it"), Turn("assistant", "ok", tool_calls=(call,))))
    s = build_scrubber(environ={}, homes=[])
    for _ in range(2):
        clean, counts = s.scrub_session(session)
        assert counts == Redactions() and clean.turns[1].tool_calls[0] is call
    monkeypatch.setenv("SLEEP_LATER_TOKEN", value)
    clean, counts = s.scrub_session(session)
    assert value not in json.dumps(clean.to_dict()) and counts.secrets == 3  # the summary, the command, the path
