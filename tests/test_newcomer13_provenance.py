"""`skillgit check --print-workflow` from a clone whose remote is a path (a mirror on the same machine, as the
newcomer of wave 13 had: `git clone /srv/skillgit`) warned "its commit is on none of its remotes (push it
first)": wrong — the commit was on `origin`, which CI simply cannot reach. Now it names that remote and why."""

from __future__ import annotations

from skillgit.provenance import Source, _pin_checkout
from tests.conftest import git
from tests.test_provenance import checkout  # noqa: F401 (the fixture)


def test_a_commit_on_a_remote_only_this_machine_reaches_is_named_not_told_to_push(checkout, tmp_path):  # noqa: F811
    local = Source("local", folder=str(checkout), editable=True)
    git(checkout, "remote", "set-url", "origin", str(tmp_path / "mirror"))  # the commit is on origin/main
    src = _pin_checkout(local, None)
    assert src.requirement() is None
    assert src.detail == (f"its commit is on the remote 'origin' ({tmp_path / 'mirror'}), which only this machine "
                          "can reach (push it to an https:// or ssh:// remote)")
    git(checkout, "commit", "-q", "--allow-empty", "-m", "not pushed")  # on no remote at all: push it
    assert _pin_checkout(local, None).detail == "its commit is on none of its remotes (push it first)"
