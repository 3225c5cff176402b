"""Nothing installs or runs skillgit by its bare name from a package index (issue 19, item 4): the name `skillgit`
there is not ours, so `pip install skillgit`, a `skillgit==X` pin, `pipx install`, `uv tool install`, `uvx` and
`pipx run` of the name would hand whoever registers it code execution in every agent and CI job.

Scanned: every file of the repository (tracked or new, not ignored) and everything skillgit generates — the Claude
Code plugin and Codex files, every artifact `skillgit install` writes for each agent and scope, the CI workflow
`check --print-workflow` prints for every kind of source, and the install hints."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SELF = Path(__file__).resolve().relative_to(ROOT).as_posix()
# Files another change owns, listed with what must replace the match there; each must still match (a stale entry
# fails the test, so the list only shrinks).
PENDING: dict[str, str] = {}

_INSTALLER = re.compile(r"\b(?:python3?\s+-m\s+)?(?:pip3?|pipx|uv\s+pip|uv\s+tool|uv)\s+install\b|\buvx\b"
                        r"|\bpipx\s+run\b")
_BARE = re.compile(r"skillgit(?:\[[^\]]*\])?(?:\s*[=<>!~]=?\s*[\w.*]+)?")
_END = re.compile(r"\n|`|&&|\|\||;|\||\s#")  # where a command ends (a `#` after a space starts a comment)


def _tokens(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:  # an unbalanced quote in prose: split on spaces, strip quotes
        return [t.strip("'\"") for t in command.split()]


def bare_installs(text: str) -> list[str]:
    """Every command in `text` that installs or runs skillgit by its bare name (see the module docstring)."""
    found = [m.group(0) for m in re.finditer(r"\bskillgit\s*==", text)]
    for m in _INSTALLER.finditer(text):
        end = _END.search(text, m.end())
        command = text[m.start():end.start() if end else len(text)]
        words = _tokens(command[m.end() - m.start():])
        kind = m.group(0).split()[-1]
        for i, word in enumerate(words):
            if not _BARE.fullmatch(word):
                continue
            if i + 1 < len(words) and words[i + 1] == "@":  # a direct reference: `skillgit @ git+https://…@<sha>`
                continue
            after_from = i > 0 and words[i - 1] in ("--from", "--spec")
            sourced = any(w in ("--from", "--spec") for w in words[:i])
            if kind in ("uvx", "run") and not after_from and sourced:
                continue  # the command name after `--from <source>`: the source decides
            found.append(command.strip())
            break
    return found


def test_the_detector_catches_every_form_and_passes_exact_sources():
    bad = ["pip install skillgit", 'python -m pip install "skillgit==0.1.0"', "pip install --upgrade skillgit",
           "pip install 'skillgit[mcp]'", "pipx install 'skillgit[mcp]'", "uv tool install 'skillgit[mcp]'",
           "uv pip install skillgit", "uvx skillgit mcp", "uvx --from 'skillgit[mcp]' skillgit mcp",
           "pipx run skillgit log", "pipx run --spec 'skillgit[mcp]' skillgit", "pip install -U 'skillgit>=0.1'",
           "see `pipx install 'skillgit[mcp]'`"]
    for text in bad:
        assert bare_installs(text), text
    good = ["pip install .", "pip install -e '.[test]'", "pip install '.[mcp]'", "pip install './skillgit[mcp]'",
            "pip install 'skillgit[mcp] @ git+https://git.example.org/t/skillgit.git@" + "a" * 40 + "'",
            'python -m pip install "skillgit @ https://f.example.org/skillgit-0.1.0-py3-none-any.whl#sha256=' +
            "b" * 64 + '"', "pip install '/home/me/skillgit[mcp]'", "uvx --from /home/me/skillgit skillgit mcp",
            "pip install 'ray[default]>=2.9'", "pip install 'mcp>=1.25,<3'", "skillgit install claude --project"]
    for text in good:
        assert not bare_installs(text), text


def _repository_files() -> list[Path]:
    proc = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                          capture_output=True, timeout=60)
    if proc.returncode != 0:
        pytest.skip("not a git checkout: the repository scan needs `git ls-files`")
    names = sorted({n for n in proc.stdout.decode().split("\0") if n})
    return [ROOT / n for n in names if (ROOT / n).is_file()]


def test_no_file_in_the_repository_installs_skillgit_by_bare_name():
    offenders: dict[str, list[str]] = {}
    for path in _repository_files():
        rel = path.relative_to(ROOT).as_posix()
        if rel == SELF:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if found := bare_installs(text):
            offenders[rel] = found
    assert {k: v for k, v in offenders.items() if k not in PENDING} == {}
    assert set(PENDING) <= set(offenders), "a pending file is fixed: remove it from PENDING"


def _generated() -> dict[str, str]:
    from skillgit.integrations import assets
    from skillgit.provenance import FROM_A_CLONE, Source, extra_hint, from_direct_url, source

    out = {f"plugin/{k}": v for k, v in assets.claude_plugin_files().items()}
    out.update({f"codex/{k}": v for k, v in assets.codex_files().items()})
    out["marketplace.json"] = assets.repository_marketplace()
    out.update({f"command/{c.name}": c.text() for c in assets.COMMANDS})
    out["from-a-clone"] = FROM_A_CLONE.format(extras="[mcp]")
    out.update({f"extra/{e}": extra_hint(e) for e in ("mcp", "ray", "report")})
    sources = [source(), Source("unknown"), from_direct_url({"url": "file:///home/me/skillgit", "dir_info": {}}),
               from_direct_url({"url": "https://git.example.org/t/skillgit.git",
                                "vcs_info": {"vcs": "git", "commit_id": "c" * 40}})]
    for i, src in enumerate(sources):
        out[f"hint/{i}"] = src.install_hint(["mcp"]) + "\n" + src.install_hint()
    return out


def test_nothing_skillgit_generates_installs_it_by_bare_name(make_repo, tmp_path):
    from skillgit.executor import RAY_HINT
    from skillgit.integrations import artifacts as A
    from skillgit.project import open_project
    from skillgit.provenance import Source, from_direct_url, source
    from skillgit.review.workflow import render_for

    texts = _generated()
    texts["ray-hint"] = RAY_HINT
    repo = make_repo()
    for agent in A.targets():
        for scope in A.SCOPES:
            for art in A.artifacts(agent, scope, repo if scope == "project" else tmp_path, {}):
                value = getattr(art, "text", None) or getattr(art, "block", None) or json.dumps(art.value)
                texts[f"{agent}/{scope}/{art.path.name}"] = value
    project = open_project(repo)
    for i, src in enumerate([source(), Source("unknown"),
                             from_direct_url({"url": "https://git.example.org/t/skillgit.git",
                                              "vcs_info": {"vcs": "git", "commit_id": "c" * 40}})]):
        texts[f"workflow/{i}"] = render_for(project, src)
    offenders = {name: found for name, text in texts.items() if (found := bare_installs(text))}
    assert offenders == {}
