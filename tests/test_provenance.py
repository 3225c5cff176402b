"""Where the running skillgit came from (`skillgit.provenance`), and that skillgit installs itself only from that
exact source: a real wheel served on 127.0.0.1 and installed by pip from its URL names itself by URL and hash, and
pip installs that requirement (and refuses it with another hash); checkouts are pinned only when they prove the
commit; unsafe or unknown sources are never guessed."""

from __future__ import annotations

import base64
import functools
import hashlib
import http.server
import os
import subprocess
import sys
import sysconfig
import threading
from importlib.metadata import PathDistribution
from pathlib import Path

import pytest

from skillgit.provenance import EXTRAS, Source, _installed_is_checkout, _pin_checkout, from_direct_url, source
from tests.conftest import git

ROOT = Path(__file__).resolve().parents[1]
C = "0123456789abcdef" * 2 + "01234567"  # a 40-hex commit


@pytest.mark.parametrize(("data", "requirement"), [
    ({"url": "https://git.example.org/t/skillgit.git", "vcs_info": {"vcs": "git", "commit_id": C}},
     f"skillgit[mcp] @ git+https://git.example.org/t/skillgit.git@{C}"),
    ({"url": "https://me:s3cret@git.example.org/t/skillgit.git", "vcs_info": {"vcs": "git", "commit_id": C},
      "subdirectory": "py"}, f"skillgit[mcp] @ git+https://git.example.org/t/skillgit.git@{C}#subdirectory=py"),
    ({"url": "ssh://git@git.example.org/t/skillgit.git", "vcs_info": {"vcs": "git", "commit_id": C}},
     f"skillgit[mcp] @ git+ssh://git@git.example.org/t/skillgit.git@{C}"),
    ({"url": "https://f.example.org/skillgit-0.1.0-py3-none-any.whl", "archive_info": {"hashes": {"sha256": "c" * 64}}},
     f"skillgit[mcp] @ https://f.example.org/skillgit-0.1.0-py3-none-any.whl#sha256={'c' * 64}"),
    ({"url": "https://f.example.org/skillgit-0.1.0.tar.gz", "archive_info": {"hash": f"sha256={'d' * 64}"}},
     f"skillgit[mcp] @ https://f.example.org/skillgit-0.1.0.tar.gz#sha256={'d' * 64}"),
    # no hash: the URL could serve anything tomorrow; a local file, a local clone, a folder: not elsewhere
    ({"url": "https://f.example.org/skillgit-0.1.0-py3-none-any.whl", "archive_info": {}}, None),
    ({"url": "file:///tmp/skillgit-0.1.0-py3-none-any.whl", "archive_info": {"hashes": {"sha256": "c" * 64}}}, None),
    ({"url": "file:///src/skillgit", "vcs_info": {"vcs": "git", "commit_id": C}}, None),
    ({"url": "file:///home/me/skillgit", "dir_info": {"editable": True}}, None),
    # not a commit, another VCS, text a shell or YAML would interpret: never written anywhere
    ({"url": "https://git.example.org/t/skillgit.git", "vcs_info": {"vcs": "git", "commit_id": "main"}}, None),
    ({"url": "https://hg.example.org/skillgit", "vcs_info": {"vcs": "hg", "commit_id": C}}, None),
    ({"url": 'https://x.example.org/a"$(touch pwned)`id`.git', "vcs_info": {"vcs": "git", "commit_id": C}}, None),
    ({"url": "https://x.example.org/a b.git", "vcs_info": {"vcs": "git", "commit_id": C}}, None),
    ({"url": "https://x.example.org/s.git", "vcs_info": {"vcs": "git", "commit_id": C}, "subdirectory": "../.."},
     None),
    ({"nothing": "here"}, None),
    ([1, 2], None),
])
def test_a_pep_610_record_becomes_an_exact_requirement_or_none(data, requirement):
    src = from_direct_url(data)
    assert src.requirement(["mcp"]) == requirement
    hint = src.install_hint(["mcp"])
    assert (requirement in hint) if requirement else "from a clone of its repository" in hint
    assert "s3cret" not in hint and "$(" not in hint


def test_the_running_installation_is_found_wherever_skillgit_is_started(tmp_path):
    """This test environment installed skillgit with pip (editable or not): its record is found — from the source
    tree too, where a stray `skillgit.egg-info` (no provenance) sits beside the package."""
    outputs = []
    for cwd in (tmp_path, ROOT):
        proc = subprocess.run([sys.executable, "-m", "skillgit.provenance"], cwd=cwd, capture_output=True, text=True,
                              timeout=60)
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc.stdout)
    assert outputs[0] == outputs[1]
    assert source().kind != "unknown" and outputs[0].startswith(f"source: {source().describe()}\n")


def test_the_extras_hints_name_the_packages_pyproject_declares():
    tomllib = pytest.importorskip("tomllib")

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert {name: [spec] for name, spec in EXTRAS.items()} == {k: declared[k] for k in EXTRAS}


# ------------------------------------------------------------------------------------------------ checkouts
@pytest.fixture
def checkout(make_repo) -> Path:
    """A clean clone whose HEAD is on its `origin` remote (named by an https URL with a password in it)."""
    repo = make_repo({"pyproject.toml": "[project]\nname = 'skillgit'\n", "skillgit/__init__.py": "x = 1\n"})
    head = git(repo, "rev-parse", "HEAD")
    git(repo, "remote", "add", "origin", "https://me:s3cret@git.example.org/team/skillgit.git")
    git(repo, "update-ref", "refs/remotes/origin/main", head)
    return repo


def test_a_clean_pushed_checkout_is_pinned_to_its_remote_and_commit(checkout):
    head = git(checkout, "rev-parse", "HEAD")
    src = _pin_checkout(Source("local", folder=str(checkout), editable=True), None)
    assert src.pinned == f"git+https://git.example.org/team/skillgit.git@{head}"
    assert src.requirement(["mcp"]) == f"skillgit[mcp] @ {src.pinned}"
    git(checkout, "remote", "set-url", "origin", "git@git.example.org:team/skillgit.git")  # git's scp-like form
    pinned = _pin_checkout(Source("local", folder=str(checkout), editable=True), None).pinned
    assert pinned == f"git+ssh://git@git.example.org/team/skillgit.git@{head}"


def test_a_checkout_that_does_not_prove_its_commit_is_not_pinned(checkout, tmp_path):
    local = Source("local", folder=str(checkout), editable=True)
    (checkout / "skillgit" / "__init__.py").write_text("x = 2\n")  # runs code no commit has
    assert _pin_checkout(local, None).detail == "that checkout has uncommitted changes"
    git(checkout, "commit", "-qam", "local change")  # committed, never pushed
    assert _pin_checkout(local, None).detail == "its commit is on none of its remotes (push it first)"
    git(checkout, "update-ref", "refs/remotes/origin/main", "HEAD")
    git(checkout, "remote", "set-url", "origin", str(tmp_path / "elsewhere"))  # a remote only this machine has
    assert _pin_checkout(local, None).requirement() is None
    plain = tmp_path / "plain"
    plain.mkdir()
    assert _pin_checkout(Source("local", folder=str(plain)), None).requirement() is None


def _dist_with(folder: Path, files: dict[str, str]) -> PathDistribution:
    """An installed distribution (a real .dist-info read by importlib.metadata) whose RECORD lists `files`."""
    info = folder / "site" / "skillgit-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: skillgit\nVersion: 0.1.0\n")
    rows = []
    for rel, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        rows.append(f"{rel},sha256={digest},{len(text)}")
    (info / "RECORD").write_text("\n".join(rows) + "\n")
    return PathDistribution(info)


def test_a_non_editable_install_is_pinned_only_when_its_files_are_the_checkouts(checkout, tmp_path):
    same = _dist_with(tmp_path / "a", {"skillgit/__init__.py": "x = 1\n"})
    assert _installed_is_checkout(same, checkout)
    assert _pin_checkout(Source("local", folder=str(checkout)), same).pinned
    older = _dist_with(tmp_path / "b", {"skillgit/__init__.py": "x = 0\n"})  # installed before the checkout moved
    assert not _installed_is_checkout(older, checkout)
    assert _pin_checkout(Source("local", folder=str(checkout)), older).detail == \
        "the installed files differ from that folder now"


# ------------------------------------------------------------------------------------------------ a real install
class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def served(wheel, tmp_path):
    """The built wheel on an HTTP server bound to 127.0.0.1; yields its URL."""
    folder = tmp_path / "served"
    folder.mkdir()
    (folder / wheel.name).write_bytes(wheel.read_bytes())
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/{wheel.name}"
    finally:
        server.shutdown()
        server.server_close()


def _pip_target(target: Path, requirement: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target",
                           str(target), requirement], capture_output=True, text=True, timeout=300)


@pytest.mark.slow  # builds the wheel (~10 s) and installs it three times
def test_a_wheel_installed_from_its_url_names_itself_by_url_and_hash_and_pip_installs_exactly_that(
        served, wheel, tmp_path):
    first = tmp_path / "first"
    assert _pip_target(first, f"skillgit @ {served}").returncode == 0
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(first), sysconfig.get_paths()["purelib"]])}
    run = [sys.executable, "-S", "-m", "skillgit"]  # -S: only the wheel just installed can answer for skillgit
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    proc = subprocess.run([*run[:3], "skillgit.provenance"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    requirement = f"skillgit @ {served}#sha256={digest}"
    assert f"requirement: {requirement}\n" in proc.stdout
    # the CI workflow it prints installs exactly that, and says nothing more
    project = tmp_path / "project"
    assert subprocess.run([*run, "demo", "--dir", str(project), "--steps", "1"], env=env, cwd=tmp_path,
                          capture_output=True, timeout=300).returncode == 0
    printed = subprocess.run([*run, "check", "--print-workflow"], env=env, cwd=project, capture_output=True,
                             text=True, timeout=120)
    assert printed.returncode == 0 and printed.stderr == "", printed.stderr
    assert f'run: python -m pip install "{requirement}"' in printed.stdout
    # pip installs that requirement byte for byte, and refuses the same URL with another hash
    assert _pip_target(tmp_path / "second", requirement).returncode == 0
    forged = _pip_target(tmp_path / "third", f"skillgit @ {served}#sha256={'0' * 64}")
    assert forged.returncode != 0 and "hash" in forged.stderr.lower()
