"""Untrusted text never reaches a git argv as an option (issue 19, item 1).

Remote and branch names come from the command line, the config, collaborators' notes (pulled) and agent
transcripts (sleep). Before this, `skillgit pull -- "--upload-pack=touch X"` ran the command (`git ls-remote
<remote>` had no `--`), and a transcript's `gitBranch` of `--output=FILE` made `git rev-list` write a file.

`AUDIT` below is the audit: every method of `GitRepo` (skillgit/store/git.py and its bases) that runs git (a test
checks none is missing), the argv it builds, and why no outside text can become an option there; then every caller
outside git.py that builds git argv material (refspecs, remotes, branch names, revisions) from outside text.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from skillgit.errors import SkillgitError
from skillgit.store import Store
from skillgit.store import refs as R
from skillgit.store.git import GitError, GitRepo
from tests.conftest import git, run_cli, run_cli_inproc
from tests.test_cli_history import SEED, step
from tests.test_review_report import build_history

# ---------------------------------------------------------------------------------------------- the audit
# (call site, argv it builds — <x> marks an operand from outside —, why it is safe)
OPERAND = "`_operand` refuses an empty value, a leading '-', NUL or a line break"
AUDIT: list[tuple[str, str, str]] = [
    # GitRepo (store/git.py and its bases): every method that runs git
    ("GitRepo.open", "git rev-parse --path-format=absolute …; rev-parse --show-toplevel", "no operand (cwd only)"),
    ("GitRepo.locate", "git rev-parse --path-format=absolute … --show-toplevel", "no operand (cwd only)"),
    ("GitRepo.init", "git init -q -b <branch>", "the value of -b (git reads the next argv as the value)"),
    ("GitRepo._exec", "git ARGS", "the one runner: ARGS are built by the methods listed here"),
    ("GitRepo._call", "git ARGS", "runner"), ("GitRepo._run_bytes", "git ARGS", "runner"),
    ("GitRepo._run", "git ARGS", "runner"),
    ("GitRepo._object", "cat-file --batch-command: `contents <name>` on stdin", "stdin, one line; a name with a "
     "line break is refused by _BatchReader.request"),
    ("GitRepo.ref", "cat-file --batch-command: `info <ref>`", "stdin, as _object"),
    ("GitRepo.commit_of", "cat-file --batch-command: `info <rev>^{commit}`", "stdin; a leading '-' is refused"),
    ("GitRepo.write_blobs", "hash-object -w --no-filters --stdin-paths / --stdin", "paths of our own temp files"),
    ("GitRepo.mktree", "mktree --batch -z (entries on stdin)", "stdin; NUL-separated entries"),
    ("GitRepo.cat", "git cat-file -p --end-of-options <rev>", f"--end-of-options; {OPERAND}"),
    ("GitRepo.cat_batch", "git cat-file --batch (names on stdin)", "stdin; a name with a line break is answered "
     "None without being sent"),
    ("GitRepo.ls_tree", "git ls-tree -z [-r] --end-of-options <tree-ish>", f"--end-of-options; {OPERAND}"),
    ("GitRepo.commit_tree", "git commit-tree <tree> -p <parent> -F -", f"no --end-of-options in commit-tree: "
     f"{OPERAND}; the message on stdin"),
    ("GitRepo.make_tag", "git var GIT_COMMITTER_IDENT; git mktag (tag on stdin)", f"stdin; {OPERAND} (object and "
     "name: a line break would add a header)"),
    ("GitRepo.merge_file", "git merge-file -p <three temp paths>", "paths of our own temp files"),
    ("GitRepo.diff", "git --literal-pathspecs diff … --end-of-options <a> <b> -- <paths>",
     f"--end-of-options for revisions ({OPERAND}), `--` before paths. Fed by a note's `parent` (review/data)"),
    ("GitRepo.parents", "git rev-parse <commit>^@ (fallback)", f"rev-parse has no --end-of-options: {OPERAND}"),
    ("GitRepo.commit_message", "git log -1 --format=%B --end-of-options <commit>", f"--end-of-options; {OPERAND}"),
    ("GitRepo.commit_summary", "git log -1 --format=… --end-of-options <commit>", f"--end-of-options; {OPERAND}"),
    ("GitRepo.first_parent_chain", "git log --first-parent … --end-of-options <tip>", f"--end-of-options; {OPERAND}"),
    ("GitRepo.grep_first_parent", "git log … --grep=<pattern> --end-of-options <tip>", "the pattern is one "
     f"`--grep=` argv; --end-of-options; {OPERAND}"),
    ("GitRepo.find_by_trailers", "git log … --grep=^Key: value$ … --end-of-options <tip>", "each trailer is one "
     f"`--grep=` argv (values escaped); --end-of-options; {OPERAND}"),
    ("GitRepo.messages", "git log --no-walk=unsorted … --stdin (commits on stdin)", f"stdin; {OPERAND} per line"),
    ("GitRepo.subjects", "git log --no-walk=unsorted … --stdin", f"stdin; {OPERAND} per line"),
    ("GitRepo.rev_parse", "git rev-parse <rev>", f"git 2.39's rev-parse echoes --end-of-options: {OPERAND}"),
    ("GitRepo.current_branch", "git symbolic-ref --short -q HEAD", "no operand"),
    ("GitRepo.check_identity", "git var GIT_COMMITTER_IDENT", "no operand"),
    ("GitRepo.valid_branch_name", "git check-ref-format --branch <short>; check-ref-format <ref>",
     "refs.branch_problem first (no leading '-', no control or bidi character, no '@')"),
    ("GitRepo.status_paths", "git status --porcelain … -- <paths>", "`--` before paths"),
    ("GitRepo.commit_paths", "git add -- <paths>; git commit -q -m <message> --only -- <paths>", "`--` before "
     "paths; the message is the value of -m"),
    ("GitRepo.is_ignored", "git check-ignore -q --no-index -- <path>", "`--` before the path"),
    ("GitRepo.worktree_add", "git worktree add --detach --quiet --end-of-options <path> <rev>",
     f"--end-of-options; {OPERAND} (path and rev)"),
    ("GitRepo.worktree_remove", "git worktree remove --force --force --end-of-options <path>",
     f"--end-of-options; {OPERAND}"),
    ("GitRepo.worktree_prune", "git worktree prune", "no operand"),
    ("GitRepo.workspace_diff", "git add -A -- . :(exclude)<path>…; git diff --cached … HEAD -- <specs>",
     "`--` before pathspecs (paths of the installed skill)"),
    ("GitRepo.init_workspace", "git init -q --template= --object-format=<fmt>; git config -- <key> <value>",
     "the object format is the source repository's own; keys and values are skillgit's constants"),
    ("GitRepo._pinned", "git -c core.hooksPath=/dev/null -c core.fsmonitor=false … ARGS (GIT_DIR, GIT_WORK_TREE "
     "pinned)", "runner for the two below"),
    ("GitRepo.reset_workspace", "checkout --force --detach --quiet <commit> --; clean -ffdxq",
     f"checkout has no --end-of-options for its revision: {OPERAND} (a resolved commit id)"),
    ("GitRepo.changes_since", "add -A --sparse -- <specs>; diff --cached … --end-of-options <base> -- <specs>",
     f"`--` before pathspecs (the installed skill's folder, skill.path); --end-of-options; {OPERAND}"),
    ("GitRepo.snapshot_folder", "add -A --force -- .; write-tree; commit-tree <tree> -m fixture", f"no operand "
     f"from outside (the folder is the cwd and GIT_WORK_TREE); the tree id through {OPERAND}"),
    ("GitRepo.create_branch", "update-ref --stdin transaction", "refs.branch_problem refuses the name (GitError)"),
    ("GitRepo.remote_urls", "git config --get-regexp <fixed regex>", "no operand"),
    ("GitRepo.rev_before", "git rev-list -1 --before=<timestamp> --end-of-options <ref> --",
     "a transcript's branch: refs.branch_problem → None (no git at all); the timestamp is one `--before=` argv; "
     f"--end-of-options; {OPERAND}"),
    ("GitRepo.ls_remote", "git -c protocol.ext.allow=never ls-remote -- <remote>",
     "refs.check_remote (no leading '-', no control character, no ext::/fd::) then `--` (git also refuses a "
     "path beginning with '-': 'strange pathname')"),
    ("GitRepo.fetch", "git -c protocol.ext.allow=never fetch --quiet … -- <remote> <refspecs>",
     f"refs.check_remote, `--`; refspecs built from checked names, each through {OPERAND}"),
    ("GitRepo.push", "git -c protocol.ext.allow=never push --quiet [--atomic] -- <remote> <refspecs>",
     "as fetch"),
    ("GitRepo.pack_refs", "git pack-refs --all", "no operand"),
    ("GitRepo.repack", "git repack -d -q [--geometric=2]", "no operand"),
    ("GitRepo.loose_objects", "git count-objects", "no operand"),
    ("GitRepo.gc_auto", "git -c gc.autoDetach=false [-c gc.auto=N] gc --auto --quiet", "our own numbers"),
    ("GitRepo.for_each_ref", "git for-each-ref --format=… [--sort=…] --end-of-options <patterns>",
     "--end-of-options; patterns are skillgit's prefixes (a remote's part is refs.remote_component: a slug)"),
    ("GitRepo.merge_base", "git merge-base --end-of-options <a> <b>", f"--end-of-options; {OPERAND}"),
    ("GitRepo.is_ancestor", "git merge-base --is-ancestor --end-of-options <a> <b>", f"--end-of-options; {OPERAND}"),
    ("GitRepo.transaction", "git update-ref -m <reason> --stdin (start/update/delete/verify lines)",
     "stdin; a ref or value holding a space or line break is refused (it would add a command); the reason is the "
     "value of -m"),
    ("GitRepo.delete_ref", "git update-ref -d --end-of-options <ref>", f"--end-of-options; {OPERAND}"),
    ("GitRepo.notes_map", "git notes --ref <ref> list", "the ref is skillgit's constant (value of --ref)"),
    ("GitRepo.note_text", "git notes --ref <ref> show --end-of-options <commit>", f"--end-of-options; {OPERAND}"),
    ("GitRepo._scratch_notes", "git -c … update-ref <tmp> <start> <zero>; update-ref -d <tmp>", "our own scratch "
     "ref (pid and uuid) and object ids"),
    ("GitRepo.merged_notes", "git notes --ref <tmp> merge -q -s cat_sort_uniq --end-of-options <commit>",
     f"--end-of-options; {OPERAND} (a fetched notes commit)"),
    ("GitRepo.worktrees", "git worktree list --porcelain -z", "no operand"),
    ("GitRepo._in_worktree", "git --literal-pathspecs -C <worktree> ARGS", "the worktree comes from `git worktree "
     "list`; ARGS as below"),
    ("GitRepo.index_entries", "… ls-files -s -z -- <path>", "`--` before the path"),
    ("GitRepo.worktree_blob", "… hash-object -- <path>", "`--` before the path"),
    ("GitRepo.checkout_path", "… checkout --no-overlay <commit> -- <path>", f"checkout has no --end-of-options for "
     f"its revision: {OPERAND}; `--` before the path"),
    ("GitRepo.index_is", "… diff --cached --quiet --no-ext-diff --end-of-options <commit> -- <path>",
     f"--end-of-options; {OPERAND}; `--`"),
    ("GitRepo.worktree_is", "… diff --quiet … --end-of-options <commit> -- <path>; ls-files --others … -- <path>",
     f"--end-of-options; {OPERAND}; `--`"),
    ("GitRepo.index_file_is", "git --literal-pathspecs diff --cached --quiet --no-ext-diff --end-of-options <commit> "
     "-- <path> (GIT_INDEX_FILE: a hook's index)", f"--end-of-options; {OPERAND}; `--`"),
    ("GitRepo.same_path", "git diff --quiet … --end-of-options <a> <b> -- <path>", f"--end-of-options; {OPERAND}"),
    ("GitRepo.ff_merge", "… merge --ff-only --quiet --end-of-options <commit>", f"--end-of-options; {OPERAND}"),
    ("GitRepo.config_get_all", "git config --get-all -- <key>", "`--` (keys are skillgit's constants)"),
    ("GitRepo.config_add", "git config --add -- <key> <value>", "`--`; git config reads what follows the key as "
     "values"),
    ("GitRepo.config_unset_value", "git config --unset-all --fixed-value -- <key> <value>", "as config_add"),
    ("GitRepo.config_set", "git config -- <key> <value>", "as config_add"),
    ("GitRepo.git_path", "git rev-parse --git-path <name>", "the name is skillgit's constant ('hooks')"),
    ("GitRepo.grep_tree", "git -c grep.fullName=false grep -a -z … <expression> <tree> --", "the expression is "
     f"skillgit's constant (-e patterns); the tree is a notes commit id through {OPERAND}"),
    ("_Persistent._pipes", "git cat-file --batch-command / mktree --batch -z / hash-object --stdin-paths",
     "fixed argv; requests on stdin"),
    # callers outside git.py that build argv material from outside text
    ("cli/history.py push, pull", "remote argument", "refs.check_remote before the store is opened: exit 2, "
     "nothing runs"),
    ("cli/review.py pr", "--head, --base, --push; the head/base a run recorded (notes)", "refs.check_branch / "
     "refs.check_remote before anything runs: exit 2"),
    ("store/sync.py pull, push", "ls-remote/fetch/push <remote>; refspecs from the skill branch and skillgit's "
     "prefixes", "refs.check_remote first; remote-tracking refs use refs.remote_component (a slug)"),
    ("review/pr.py push_head", "push refspec refs/heads/<head>:refs/heads/<head>", "refs.check_branch (a ':' "
     "would push to another branch)"),
    ("review/pr.py create_with_gh", "gh pr create --base=<b> --head=<h> --title=<t> --body-file=<f>",
     "each value joined to its flag; branch names through refs.check_branch"),
    ("review/branch.py prepare / recorded_base", "train --branch <name>; a note's `base`",
     "refs.check_branch / refs.branch_problem (no '-', '@', bidi or control characters)"),
    ("review/data.py load_run", "git diff <parent> <sha> (a note's `parent`)", "notes.conform keeps only a commit "
     "id (40/64 hex); GitRepo.diff uses --end-of-options; a missing parent gives no diff"),
    ("store/history.py other_run_branches", "cat-file info refs/heads/<branch> (a run ref's progress.json)",
     "stdin of the batch reader (line breaks refused)"),
    ("sleep/mine.py rev_before", "rev-list --before=<transcript timestamp> <transcript gitBranch>",
     "GitRepo.rev_before: refs.branch_problem, --end-of-options"),
    ("integrations/commands.py prepare_review_branch", "create_branch <name>", "GitRepo.create_branch refuses a "
     "bad name"),
]


def _git_running_methods() -> set[str]:
    """Every function of `GitRepo` (store/git.py and the modules it is assembled from: gitproc, gitobjects, gitnotes,
    gitwork) that runs git (directly, through a runner, or through the batch reader). A method of one of GitRepo's
    bases is listed as `GitRepo.<name>`: that is how every caller reaches it."""
    store = Path(__file__).parents[1] / "skillgit" / "store"
    bases = {"GitBase", "GitObjects", "GitNotes", "GitWork"}
    runners = {"_run", "_call", "_run_bytes", "_in_worktree", "_exec", "execute", "ask", "request"}
    found = set()
    for module in ("git", "gitproc", "gitobjects", "gitnotes", "gitwork"):
        tree = ast.parse((store / f"{module}.py").read_text())
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            for fn in (n for n in cls.body if isinstance(n, ast.FunctionDef)):
                calls = {getattr(c.func, "attr", getattr(c.func, "id", ""))
                         for c in ast.walk(fn) if isinstance(c, ast.Call)}
                if calls & runners and not (cls.name in ("_LineServer", "_BatchReader")
                                            and fn.name in ("ask", "request")):
                    found.add(f"{'GitRepo' if cls.name in bases else cls.name}.{fn.name}")
    return found


def test_the_audit_lists_every_git_call_site():
    audited = {site for site, _, _ in AUDIT}
    missing = _git_running_methods() - audited
    assert not missing, f"git call sites missing from the audit table: {sorted(missing)}"
    assert all(why.strip() for _, _, why in AUDIT)


# ---------------------------------------------------------------------------------------------- the defect
@pytest.fixture
def shared(make_repo, tmp_path):
    """A repository with one accepted and one rejected step, an `origin` remote (so git has a repository to run the
    planted upload-pack against) and a trained review branch for `pr`."""
    root = make_repo({"SKILL.md": SEED})
    store = Store.open(root, "SKILL.md")
    step(store, SEED + "Check units.\n", 1, True, 0.5, 0.6)
    remote = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(root, "remote", "add", "origin", str(remote))
    return root


PLANTED = ["--upload-pack=touch {x}", "--receive-pack=touch {x}", "--exec=touch {x}"]


@pytest.mark.parametrize("command", ["pull", "push"])
@pytest.mark.parametrize("planted", PLANTED)
def test_pull_and_push_with_a_remote_beginning_with_dash_exit_2_and_run_nothing(shared, tmp_path, command, planted):
    marker = tmp_path / "PWNED"
    before = git(shared, "for-each-ref")
    proc = run_cli_inproc(command, "--", planted.format(x=marker), cwd=shared)
    assert proc.returncode == 2, proc.stderr
    assert "error: invalid remote" in proc.stderr and "begins with '-'" in proc.stderr and "hint:" in proc.stderr
    assert not marker.exists()  # the command did not run
    assert git(shared, "for-each-ref") == before  # and nothing else happened


def test_pr_push_with_a_remote_or_branch_beginning_with_dash_exits_2_and_runs_nothing(make_repo, tmp_path):
    root = make_repo({"SKILL.md": SEED})
    build_history(root)
    git(root, "branch", "review/x", "main")
    remote = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(root, "remote", "add", "origin", str(remote))
    marker = tmp_path / "PWNED"
    for args in (["--push", f"--upload-pack=touch {marker}", "--head", "review/x"],
                 ["--push", "origin", "--head=-x"], ["--push", "origin", "--head", "review/x", "--base=--all"]):
        proc = run_cli_inproc("pr", "--run", "r1", *args, cwd=root)
        assert proc.returncode == 2, (args, proc.stderr)
        assert "error: invalid" in proc.stderr and "begins with '-'" in proc.stderr
        assert not marker.exists()
        assert git(remote, "for-each-ref") == ""  # nothing was pushed


def test_a_real_process_refuses_it_too(shared, tmp_path):
    """The same through the installed entry point (a subprocess), with the remote as a plain argument."""
    marker = tmp_path / "PWNED"
    proc = run_cli("pull", f"--upload-pack=touch {marker}", cwd=shared)
    assert proc.returncode == 2 and not marker.exists(), proc.stderr


def test_a_transcripts_branch_never_makes_git_write_a_file(make_repo, tmp_path):
    """sleep: `gitBranch` from an agent transcript picks the commit a task replays at (`mine.rev_before`)."""
    from skillgit.sleep.mine import rev_before

    root = make_repo({"SKILL.md": SEED})
    target = tmp_path / "written-by-git"
    head = git(root, "rev-parse", "HEAD")
    assert rev_before(root, "2030-01-01T00:00:00Z", f"--output={target}") == head  # falls back to HEAD
    assert not target.exists()


# ---------------------------------------------------------------------------------------------- the guards
@pytest.mark.parametrize("name", ["-x", "--output=/tmp/x", "@", "a\u202eb", "a b", "a..b", "x:y", "a\nb", ""])
def test_branch_names_are_checked_by_gits_rules_and_ours(name):
    assert R.branch_problem(name) is not None
    with pytest.raises(SkillgitError) as err:
        R.check_branch(name)
    assert err.value.code == 2


@pytest.mark.parametrize("name", ["main", "review/better-dates", "sleep/2026-01-01", "feature/été"])
def test_ordinary_branch_names_pass(name):
    assert R.branch_problem(name) is None


@pytest.mark.parametrize("remote", ["-x", "--upload-pack=touch x", "ext::sh -c touch% x", "fd::3", "a\tb", "a\u202e"])
def test_remote_names_are_checked(remote):
    assert R.remote_problem(remote) is not None


@pytest.mark.parametrize("remote", ["origin", "/srv/git/my repo.git", "git@github.com:org/skills.git",
                                    "https://github.com/org/skills.git", "../shared.git"])
def test_ordinary_remotes_pass(remote):
    assert R.remote_problem(remote) is None


def test_every_git_method_refuses_an_operand_git_would_read_as_an_option(make_repo, tmp_path):
    """Defence in depth below the checks above: each method given `--output=FILE` raises GitError (or answers
    None/False) and git writes nothing."""
    root = make_repo({"SKILL.md": SEED})
    repo = GitRepo.open(root)
    head = git(root, "rev-parse", "HEAD")
    git(root, "notes", "--ref", "skillgit", "add", "-m", "{}", head)  # (so merged_notes has notes to merge into)
    target = tmp_path / "out"
    bad = f"--output={target}"
    calls = [lambda: repo.cat(bad), lambda: repo.ls_tree(bad), lambda: repo.commit_tree(bad, [], "m"),
             lambda: repo.commit_tree(repo.empty_tree(), [bad], "m"), lambda: repo.diff(bad, head, ["SKILL.md"]),
             lambda: repo.diff(head, bad, ["SKILL.md"]), lambda: repo.commit_message(bad),
             lambda: repo.commit_summary(bad), lambda: repo.first_parent_chain(bad),
             lambda: repo.grep_first_parent(bad, "x"), lambda: repo.find_by_trailers(bad, {"A": "b"}),
             lambda: repo.messages([bad]), lambda: repo.subjects([bad]), lambda: repo.rev_parse(bad),
             lambda: repo.worktree_add(tmp_path / "wt", bad), lambda: repo.merge_base(bad, head),
             lambda: repo.is_ancestor(bad, head), lambda: repo.delete_ref(bad), lambda: repo.note_text(bad),
             lambda: repo.merged_notes(bad), lambda: repo.checkout_path(root, bad, "SKILL.md"),
             lambda: repo.index_is(root, bad, "SKILL.md"), lambda: repo.worktree_is(root, bad, "SKILL.md"),
             lambda: repo.index_file_is(root / ".git" / "index", bad, "SKILL.md"),
             lambda: repo.same_path(bad, head, "SKILL.md"), lambda: repo.ff_merge(root, bad),
             lambda: repo.grep_tree(bad, ["-e", "x"]), lambda: repo.ls_remote(bad), lambda: repo.fetch(bad, []),
             lambda: repo.push(bad, ["HEAD"], atomic=True), lambda: repo.create_branch(bad, head),
             lambda: repo.make_tag(head, "x\nobject 0", "m")]
    for call in calls:
        try:
            result = call()
        except (GitError, SkillgitError):
            continue
        assert result in (None, False, {}, []), result
    assert repo.commit_of(bad) is None and repo.rev_before("2030-01-01", bad) is None
    assert not target.exists()
    with pytest.raises(GitError, match="space or line break"):
        from skillgit.store.git import RefUpdate

        repo.transaction([RefUpdate("update", f"refs/heads/x {head} {'0' * 40}\ndelete refs/heads/main", head)], "t")
    assert git(root, "rev-parse", "main") == head


def test_ext_transport_never_runs(make_repo, tmp_path):
    root = make_repo({"SKILL.md": SEED})
    marker = tmp_path / "ext-ran"
    proc = run_cli_inproc("pull", f"ext::sh -c touch% {marker}", cwd=root)
    assert proc.returncode == 2 and "ext::" in proc.stderr and not marker.exists()
    # below the check: git itself is told never to use ext::
    repo = GitRepo.open(root)
    with pytest.raises(GitError):
        repo._run("-c", "protocol.ext.allow=never", "ls-remote", "--", f"ext::sh -c touch% {marker}")
    assert not marker.exists()


def test_push_pull_still_work_with_paths_and_names(shared, tmp_path):
    """The checks let ordinary remotes through: a configured name and a path with a space."""
    spaced = tmp_path / "my remote.git"
    git(tmp_path, "init", "-q", "--bare", str(spaced))
    for remote in ("origin", str(spaced)):
        assert run_cli_inproc("push", remote, cwd=shared).returncode == 0
        assert run_cli_inproc("pull", remote, cwd=shared).returncode == 0
    assert git(spaced, "rev-parse", "main") == git(shared, "rev-parse", "main")


def test_a_notes_recorded_base_that_git_could_read_as_an_option_is_ignored():
    """A collaborator's `review` record names the base branch `pr` proposes into."""
    from skillgit.records import ReviewNote
    from skillgit.review.branch import recorded_base

    def note(base: str) -> list[ReviewNote]:  # as read from a collaborator's notes
        return [ReviewNote.from_note({"kind": "review", "run": "r1", "base": base})]

    assert recorded_base(note("--all"), "r1") is None
    assert recorded_base(note("main"), "r1") == "main"
