"""`skillgit install|uninstall` when things go wrong (issue 19, item 7): a write that fails half way (a read-only
folder, a full disk, Ctrl-C, kill -9), a folder symlink that leads out of the tree, and a tampered install record.
Install is transactional and records before it writes; uninstall acts only on what it owns."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from skillgit.errors import SkillgitError
from skillgit.integrations import install as I
from skillgit.integrations.locations import project_manifest
from skillgit.integrations.manifest import sha
from tests import test_install as T

USER_FILES_REPO, snapshot = T.USER_FILES_REPO, T.snapshot
scratch = T.scratch  # the fixture: a scratch repository and HOME holding the user's own configs


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """Make `folder` refuse new files: its mode for a normal user, `chattr +i` for root (who ignores modes)."""
    folder.chmod(0o555)
    immutable = False
    if os.geteuid() == 0 and shutil.which("chattr"):
        immutable = subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode == 0
    try:
        probe = folder / ".probe"
        try:
            probe.write_text("x")
        except OSError:
            pass
        else:
            probe.unlink()
            pytest.skip("cannot make a folder read-only here (root, and no chattr on this file system)")
        yield
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
        folder.chmod(0o755)


# ------------------------------------------------------------------------------------------------ transactional
def test_install_into_a_read_only_folder_puts_everything_back_and_says_what_failed(scratch, cli):
    repo, home = scratch
    hooks = repo / ".claude" / "hooks"
    hooks.mkdir(parents=True)
    before = snapshot(repo)
    with read_only(hooks):
        with pytest.raises(SkillgitError) as err:
            I.install("claude", "project", repo=repo, home=home)
        assert snapshot(repo) == before  # no skill, no commands, no folders, no record: nothing at all
        assert "could not write .claude/hooks/skillgit-session-end.sh" in err.value.message
        assert "everything written before it was put back" in err.value.message
        assert f"make {hooks} writable" in err.value.hint
        done = cli("install", "claude", "--project", cwd=repo, env={"HOME": str(home)})
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert "could not write .claude/hooks/skillgit-session-end.sh" in done.stderr
        assert snapshot(repo) == before
    assert I.install("claude", "project", repo=repo, home=home).changed  # writable again: installs as usual
    I.uninstall("claude", "project", repo=repo, home=home)
    assert snapshot(repo) == before


@pytest.mark.parametrize("failure", [OSError(errno.ENOSPC, "No space left on device"), KeyboardInterrupt()])
def test_a_write_failing_half_way_rolls_back_edited_files_byte_for_byte(scratch, monkeypatch, failure):
    repo, home = scratch
    before = snapshot(repo)
    real = I.write_text
    seen: list[Path] = []

    def failing(path: Path, text: str, executable: bool = False) -> None:
        seen.append(path)
        if path.name == ".mcp.json":  # the last artifact: the skill, commands, hook and settings.json are written
            raise failure
        real(path, text, executable)

    monkeypatch.setattr(I, "write_text", failing)
    with pytest.raises(type(failure)) if isinstance(failure, KeyboardInterrupt) else pytest.raises(SkillgitError):
        I.install("claude", "project", repo=repo, home=home)
    assert repo / ".claude" / "settings.json" in seen  # an edited file of theirs was among the writes
    assert snapshot(repo) == before  # settings.json has its exact bytes back; the rest is gone


KILLER = """
import os, signal, sys
from pathlib import Path
from skillgit.integrations import install as I
real, count = I.write_text, [0]
def write_then_die(path, text, executable=False):
    count[0] += 1
    if count[0] == int(sys.argv[3]):
        os.kill(os.getpid(), signal.SIGKILL)
    real(path, text, executable)
I.write_text = write_then_die
I.install("claude", "project", repo=Path(sys.argv[1]), home=Path(sys.argv[2]))
"""


def test_an_install_killed_mid_way_is_recorded_so_uninstall_removes_it(scratch):
    repo, home = scratch
    before = snapshot(repo)
    killed = subprocess.run([sys.executable, "-c", KILLER, str(repo), str(home), "5"], capture_output=True,
                            text=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert (repo / ".claude" / "commands").is_dir() and snapshot(repo) != before  # 4 files were written
    record = json.loads(project_manifest(repo).read_text())
    assert all(r["pending"] for r in record["records"])  # recorded before written
    report = I.uninstall("claude", "project", repo=repo, home=home)
    assert "nothing to uninstall" not in " ".join(report.warnings)
    assert {a.what for a in report.actions} == {"remove", "gone"}
    assert snapshot(repo) == before
    # killed again, then installed again: the interrupted install is completed, not refused
    subprocess.run([sys.executable, "-c", KILLER, str(repo), str(home), "7"], capture_output=True, timeout=120)
    assert I.install("claude", "project", repo=repo, home=home).changed
    assert not any(r.get("pending") for r in json.loads(project_manifest(repo).read_text())["records"])
    I.uninstall("claude", "project", repo=repo, home=home)
    assert snapshot(repo) == before


# ------------------------------------------------------------------------------------------------ symlinks
def test_install_never_writes_through_a_folder_symlink_that_leads_out_of_the_root(scratch, tmp_path):
    repo, home = scratch
    outside = tmp_path / "outside"
    (outside / "claude").mkdir(parents=True)
    (outside / "codex").mkdir()
    (repo / ".claude").rename(outside / "claude-was")
    (repo / ".claude").symlink_to(outside / "claude")  # the project's .claude is someone else's folder
    (home / ".codex").rename(outside / "codex-was")
    (home / ".codex").symlink_to(outside / "codex")
    before = snapshot(repo), snapshot(home), snapshot(outside)
    with pytest.raises(SkillgitError) as err:
        I.install("claude", "project", repo=repo, home=home)
    assert "nothing installed" in err.value.message
    assert f"{repo / '.claude'} is a symlink to {outside / 'claude'}, outside {repo}" in err.value.message
    with pytest.raises(SkillgitError) as err:
        I.install("codex", "user", repo=repo, home=home)
    assert f"{home / '.codex'} is a symlink to {outside / 'codex'}, outside {home}" in err.value.message
    assert (snapshot(repo), snapshot(home), snapshot(outside)) == before
    # a folder link that stays inside the repository is fine: written through, and removed exactly
    (repo / ".claude").unlink()
    (repo / "config" / "claude").mkdir(parents=True)
    (repo / ".claude").symlink_to(Path("config") / "claude")
    inside = snapshot(repo)
    I.install("claude", "project", repo=repo, home=home)
    assert (repo / "config" / "claude" / "skills" / "skillgit" / "SKILL.md").is_file()
    I.uninstall("claude", "project", repo=repo, home=home)
    assert snapshot(repo) == inside


def test_uninstall_never_follows_a_folder_swapped_for_a_link_out_of_the_tree(scratch, tmp_path):
    repo, home = scratch
    I.install("codex", "project", repo=repo, home=home)
    skills = repo / ".agents" / "skills"
    outside = tmp_path / "outside-skills"
    shutil.copytree(skills, outside)  # someone's own copy, byte-identical to what skillgit wrote
    shutil.rmtree(skills)
    skills.symlink_to(outside)
    report = I.uninstall("codex", "project", repo=repo, home=home)
    assert (outside / "skillgit" / "SKILL.md").is_file()
    assert any(".agents/skills/skillgit/SKILL.md: it leads out of" in w for w in report.warnings)


# ------------------------------------------------------------------------------------------------ the record
def test_a_tampered_install_record_never_makes_uninstall_delete_what_skillgit_did_not_write(scratch, tmp_path):
    repo, home = scratch
    I.install("codex", "project", repo=repo, home=home)
    victims = {tmp_path / "victim.txt": "precious\n", repo / "src" / "main.py": "print('mine')\n",
               tmp_path / "up.txt": "also precious\n"}
    for path, text in victims.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    empty = tmp_path / "empty-folder"
    empty.mkdir()
    manifest = project_manifest(repo)
    data = json.loads(manifest.read_text())
    forged = [{"agent": "codex", "kind": "file", "path": path, "sha_after": sha(text), "sha_before": None,
               "created_dirs": [str(empty)]}
              for path, text in ((str(tmp_path / "victim.txt"), "precious\n"), ("src/main.py", "print('mine')\n"),
                                 ("../up.txt", "also precious\n"))]
    # a real artifact path with the wrong kind: "delete the whole AGENTS.md" instead of "remove our block"
    agents = repo / "AGENTS.md"
    forged.append({"agent": "codex", "kind": "file", "path": "AGENTS.md", "sha_after": sha(agents.read_text())})
    data["records"] = [r for r in data["records"] if r["path"] != "AGENTS.md"] + forged
    data["created_dirs"] = [str(empty)]
    manifest.write_text(json.dumps(data))
    report = I.uninstall("codex", "project", repo=repo, home=home)
    for path, text in victims.items():
        assert path.read_text() == text
    assert agents.read_text().startswith(USER_FILES_REPO["AGENTS.md"]) and empty.is_dir()
    warnings = " | ".join(report.warnings)
    assert f"{tmp_path / 'victim.txt'}: it is not a file skillgit installs for this agent" in warnings
    assert "src/main.py: it is not a file skillgit installs" in warnings and "../up.txt: it is not" in warnings
    assert not (repo / ".agents").exists()  # what skillgit did write is gone as usual
