"""Untrusted text in the dashboard (`skillgit ui`): what a collaborator wrote — a note brought by `skillgit pull`
(a decision's reason), a run's saved progress, a branch's name and commit message — reaches the page as
text (never HTML), and with no character that reorders or hides what the reviewer reads: a U+202E (right-to-left
override, Trojan-Source style), an ESC sequence, C1 controls and NUL show as the visible escapes `\\u202e`,
`\\x1b` … the terminal shows (`textsafe.shown`), in a real headless Chromium (tests/cdp.py), on the dashboard
and on the run's report it serves.

Hole this closed (the browser test failed before its fix): the server sent these strings as JSON, which the page's
`JSON.parse` turned back into the raw characters, and `textContent` put them in the page as they were.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
from pathlib import Path

import pytest

from skillgit.textsafe import shown, shown_data
from tests.cdp import CHROMIUM, Browser
from tests.conftest import git
from tests.test_probe11_terminal import _victim_with_pulled_taint
from tests.test_ui import ui_server

pytestmark = pytest.mark.skipif(importlib.util.find_spec("aiohttp") is None,
                                reason="the `ui` extra (aiohttp) is not installed")
# What reorders or hides text in a page: NUL, C0 controls other than tab/newline, ESC, C1 (U+009B is CSI), the
# bidi overrides, embeddings and isolates, zero-width characters.
ACTING = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
COMMIT_HOSTILE = "\x1b[2J\x1b[31mRED\u202eRTL\x9b2J\u2066ISO\u2069"
BRANCH = "review/\u202etxt.exe"


def _collaborators_branch(repo: Path) -> None:
    """A branch (its name holds U+202E) whose commit message holds an ESC sequence, a bidi override and a C1 CSI."""
    tree = git(repo, "rev-parse", "main^{tree}")
    env = {"GIT_AUTHOR_NAME": "c", "GIT_AUTHOR_EMAIL": "c@example.invalid", "GIT_COMMITTER_NAME": "c",
           "GIT_COMMITTER_EMAIL": "c@example.invalid", "PATH": "/usr/bin:/bin"}
    sha = subprocess.run(["git", "commit-tree", tree, "-p", "main", "-m", "fix dates" + COMMIT_HOSTILE], cwd=repo,
                         env=env, capture_output=True, text=True, check=True).stdout.strip()
    git(repo, "update-ref", f"refs/heads/{BRANCH}", sha)
    assert COMMIT_HOSTILE in git(repo, "log", "-1", "--format=%s", BRANCH)  # git kept it as written


def _texts(page, selector: str) -> str:
    return page.eval(f"[...document.querySelectorAll({selector!r})].map(e => e.textContent).join('\\n')")


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary installed")
def test_the_dashboard_shows_a_collaborators_bidi_and_escape_characters_as_visible_escapes(tmp_path):
    victim = _victim_with_pulled_taint(tmp_path)
    _collaborators_branch(victim)
    with ui_server(victim) as server:
        browser = Browser.start(tmp_path)
        try:
            page = browser.page()
            page.goto(server.url)
            page.wait("!!document.querySelector('#runs tr[data-run=\"r1\"]')", 30, "run r1 listed")
            page.wait("document.querySelectorAll('#branches tbody tr').length >= 2", 10, "both branches")

            page.eval("document.querySelector('#runs tr[data-run=\"r1\"]').click()")
            page.wait("document.querySelectorAll('#decisions tbody tr').length >= 1", 30, "r1's decisions")
            page.wait("document.querySelector('#decisions tbody').textContent.includes('LINK')", 10,
                      "the note's hostile reason")
            decisions = _texts(page, "#decisions tbody tr")
            branches = _texts(page, "#branches tbody tr")
            whole_r1 = page.eval("document.body.textContent")

            page.eval("document.querySelector('#runs tr[data-run=\"r2\"]').click()")
            page.wait("document.getElementById('run-title').textContent === 'run r2'", 30, "run r2")
            page.wait("document.getElementById('run-reason').textContent.includes('boom') || "
                      "document.getElementById('run-reason').textContent.includes('RTL')", 30, "r2's reason")
            reason = page.eval("document.getElementById('run-reason').textContent")
            whole_r2 = page.eval("document.body.textContent")
            assert page.exceptions() == []

            # the report the dashboard serves for r1 (`skillgit report`'s page) shows the note the same way
            page.goto(f"http://127.0.0.1:{server.port}/runs/r1/report?token={server.token}")
            page.wait("document.title.startsWith('skillgit report')", 60, "the report")
            report = page.eval("document.body.textContent")
        finally:
            browser.close()

    # the hostile text is there, shown: each acting character as the escape the terminal prints
    for text in (decisions, reason):
        assert "LINK" in text and "RTL" in text
        assert "\\u202e" in text and "\\x1b]8;;" in text and "\\x1b[2J" in text and "\\x9b2J" in text, text[:2000]
    assert "\\x1b[31mRED\\u202eRTL" in branches and shown(BRANCH) in branches, branches
    assert "LINK" in report and "\\u202e" in report and "\\x1b[31mRED" in report
    for text in (whole_r1, whole_r2, report):
        assert not ACTING.search(text), ACTING.findall(text)[:10]


def test_data_shown_escapes_every_string_and_keeps_the_shape():
    """The server's one place (`shown_data` before `json.dumps`): strings (keys too) escaped, numbers, booleans
    and None kept, lists and tuples as lists, any other object as its escaped `str` (as `default=str` wrote it)."""

    class Odd:
        def __str__(self) -> str:
            return "odd\u202e"

    data = {"reason": "worse\u202e detpecca\x1b[2J", "k\x9b": [1, 2.5, True, None, ("a\x00", "ok\tyes\nno")],
            "n": 3, "obj": Odd(), "crlf": "a\r\nb", "lone": "a\rb"}
    assert shown_data(data) == {"reason": "worse\\u202e detpecca\\x1b[2J", "k\\x9b": [1, 2.5, True, None,
                                                                                     ["a\\x00", "ok\tyes\nno"]],
                                "n": 3, "obj": "odd\\u202e", "crlf": "a\r\nb", "lone": "a\\x0db"}
    assert shown_data("plain — naïve") == "plain — naïve"


def test_a_config_path_with_a_bidi_character_is_started_from_its_shown_form(tmp_path):
    """The page holds a config path as the server sent it (escaped); a start request with that form starts the
    file itself, and the form matches no other file."""
    from skillgit.ui.jobs import StartRequest

    configs = ["skillgit.yaml", "configs/ab\u202egpj.yaml"]
    request = StartRequest.from_dict({"config": shown(configs[1])}, configs)
    assert request.config == configs[1]
    assert f"--config={tmp_path / configs[1]}" in request.argv(tmp_path, "/py")
    assert StartRequest.from_dict({"config": configs[1]}, configs).config == configs[1]  # the raw form too
    from skillgit.errors import SkillgitError

    with pytest.raises(SkillgitError, match="unknown config"):
        StartRequest.from_dict({"config": "configs/ab\\u202egpj.yml"}, configs)
