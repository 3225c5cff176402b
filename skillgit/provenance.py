"""Where the running skillgit came from, and how to install that same skillgit elsewhere.

The name `skillgit` on a package index is not ours: whoever registers it would run code in every agent and CI job
that installs skillgit by name. So skillgit never tells anyone — a workflow, a plugin launcher, a skill, a hint —
to install or run it by bare name; it names the exact source of the installation that is running.

Contract
- `source()` reads the PEP 610 record (`direct_url.json`) of the installed distribution that holds the running
  `skillgit` package — not merely one named skillgit (a stray `skillgit.egg-info` in the working folder is not it)
  — and returns a `Source` of one kind:
  - `vcs`: a git URL at a commit (`pip install "git+https://…@<commit>"` installed it);
  - `archive`: a wheel or sdist URL with its hash;
  - `local`: a folder (`pip install .` or `pip install -e .` from a clone); when that folder is a clean git
    checkout whose commit is on one of its remotes (https or ssh) — and, unless editable, the installed files are
    the checkout's — it also knows that remote at that commit (`Source.pinned`);
  - `unknown`: no such record (installed from a package index, from an sdist with no provenance, or run from a
    source tree that is not installed).
- `Source.requirement(extras)` is a PEP 508 direct reference another machine can install
  (`skillgit[mcp] @ git+https://host/skillgit.git@<commit>`, `skillgit @ https://…/skillgit-….whl#sha256=…`), or
  None when there is none. Every URL in it is checked: credentials are dropped and nothing a shell or YAML would
  interpret can appear (quotes, `$`, backticks, spaces, control characters); a URL that fails the check is not
  used (the source is then `unknown`).
- `Source.install_hint(extras)` is one sentence for people and agents: the exact requirement, else the local
  folder, else how to install from a clone of skillgit's repository. It never names a bare `skillgit`.
- `extra_hint(extra)` is the command that adds an optional extra to the installation that is running (its
  packages, not skillgit again).
- Git is read through `store.repository` (read-only commands) and only for a `local` source.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

NAME = "skillgit"
KINDS = ("vcs", "archive", "local", "unknown")
# the packages each optional extra adds (= pyproject.toml's [project.optional-dependencies]; tests check)
EXTRAS = {"mcp": "mcp>=1.25,<3", "ray": "ray[default]>=2.9", "report": "matplotlib>=3.7", "ui": "aiohttp>=3.9",
          "azure": "azure-identity>=1.15"}
_SAFE_URL = re.compile(r"[A-Za-z0-9._~:/?#\[\]@!&()*+,;=%-]+")
_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_HASH = re.compile(r"(sha256|sha384|sha512)=([0-9a-f]{64,128})")
FROM_A_CLONE = ("install skillgit from a clone of its repository (`git clone <skillgit repository URL> && "
                "pip install './skillgit{extras}'`) or from its git URL at a commit "
                "(`pip install 'skillgit{extras} @ git+https://<host>/<owner>/skillgit.git@<commit>'`); never by bare "
                "name from a package index (the name there is not ours)")


@dataclass(frozen=True)
class Source:
    """Where this installation came from (see the module contract)."""

    kind: str  # one of KINDS
    url: str = ""  # vcs: the repository URL (without `git+`); archive: the file URL; local: the folder's file URL
    commit: str = ""  # vcs: the commit installed
    subdirectory: str = ""  # vcs/archive: the project's folder inside it, when not the top
    hash: str = ""  # archive: "sha256=<hex>"
    folder: str = ""  # local: the folder installed from
    editable: bool = False
    pinned: str = ""  # local: `git+<remote>@<commit>` of the same code, when the checkout proves it
    detail: str = ""  # why it is what it is (for messages)

    def _reference(self) -> str | None:
        sub = f"#subdirectory={self.subdirectory}" if self.subdirectory else ""
        if self.kind == "vcs":
            return f"git+{self.url}@{self.commit}{sub}"
        if self.kind == "archive" and self.hash and not self.url.startswith("file:"):
            return f"{self.url}#{self.hash}"
        if self.kind == "local" and self.pinned:
            return self.pinned
        return None

    def requirement(self, extras: tuple[str, ...] | list[str] = ()) -> str | None:
        """`skillgit[extras] @ <reference>` that installs exactly this skillgit anywhere, or None."""
        ref = self._reference()
        if ref is None:
            return None
        return f"{NAME}{_extras(extras)} @ {ref}"

    def describe(self) -> str:
        if self.kind == "vcs":
            return f"{self.url} at commit {self.commit}"
        if self.kind == "archive":
            return f"{self.url}" + (f" ({self.hash})" if self.hash else " (no hash recorded)")
        if self.kind == "local":
            what = "an editable install of" if self.editable else "installed from"
            return f"{what} the folder {self.folder}" + (f" = {self.pinned}" if self.pinned else
                                                         f" (no pin: {self.detail})" if self.detail else "")
        return f"unknown ({self.detail})" if self.detail else "unknown"

    def install_hint(self, extras: tuple[str, ...] | list[str] = ()) -> str:
        """How to install this skillgit (see the module contract)."""
        req = self.requirement(extras)
        if req is not None:
            return f"install this same skillgit: `pip install '{req}'`"
        if self.kind == "local" and self.folder and _SAFE_URL.fullmatch(self.folder):
            here = f"pip install '{self.folder}{_extras(extras)}'"
            return (f"install skillgit from the folder this one came from: `{here}` (on this machine), or "
                    + FROM_A_CLONE.format(extras=_extras(extras)))
        return FROM_A_CLONE.format(extras=_extras(extras))


def _extras(extras: tuple[str, ...] | list[str]) -> str:
    return f"[{','.join(extras)}]" if extras else ""


def extra_hint(extra: str) -> str:
    """The command that adds `extra` to the running installation: its packages, never skillgit by name."""
    return f"pip install '{EXTRAS[extra]}'"


# ------------------------------------------------------------------------------------------------ reading PEP 610
def _clean_url(url: str) -> str | None:
    """`url` without credentials (an ssh user such as `git@` is kept), or None when it is not safe to write into a
    shell command or a YAML file."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http", "ssh", "file") or not parts.netloc and parts.scheme != "file":
        return None
    netloc = parts.netloc
    if "@" in netloc:
        user, _, host = netloc.rpartition("@")
        netloc = host if parts.scheme != "ssh" or ":" in user else f"{user}@{host}"
    clean = urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))
    return clean if _SAFE_URL.fullmatch(clean) else None


def from_direct_url(data: Any) -> Source:
    """The `Source` a PEP 610 `direct_url.json` document describes (a local folder not yet checked for a pin)."""
    if not isinstance(data, dict) or not isinstance(data.get("url"), str):
        return Source("unknown", detail="direct_url.json has no url")
    raw, sub = data["url"], str(data.get("subdirectory") or "")
    if sub and not re.fullmatch(r"[A-Za-z0-9._/-]+", sub) or ".." in sub.split("/"):
        return Source("unknown", detail="an unusual subdirectory in direct_url.json")
    vcs, archive, folder = data.get("vcs_info"), data.get("archive_info"), data.get("dir_info")
    if isinstance(vcs, dict):
        return _from_vcs(raw, sub, vcs)
    if isinstance(archive, dict):
        return _from_archive(raw, sub, archive)
    if isinstance(folder, dict) and raw.startswith("file:"):
        path = unquote(urlsplit(raw).path)
        return Source("local", url=raw, folder=path, editable=bool(folder.get("editable")))
    return Source("unknown", detail="direct_url.json names no vcs, archive or folder")


def _from_vcs(raw: str, sub: str, vcs: dict) -> Source:
    """A git checkout at a full commit, from a URL without credentials; anything else cannot be named."""
    url, commit = _clean_url(raw), str(vcs.get("commit_id") or "")
    if vcs.get("vcs") != "git" or url is None or url.startswith("file:") or not _COMMIT.fullmatch(commit):
        return Source("unknown", detail=f"a {vcs.get('vcs')} checkout skillgit cannot name ({raw})")
    return Source("vcs", url=url, commit=commit, subdirectory=sub)


def _from_archive(raw: str, sub: str, archive: dict) -> Source:
    """An archive URL with its first well-formed hash (the `hashes` table, then the older `hash`)."""
    url = _clean_url(raw)
    hashes = archive.get("hashes")
    hashes = hashes if isinstance(hashes, dict) else {}
    pick = next((f"{k}={v}" for k, v in sorted(hashes.items()) if _HASH.fullmatch(f"{k}={v}")), "")
    if not pick and isinstance(archive.get("hash"), str) and _HASH.fullmatch(archive["hash"]):
        pick = archive["hash"]
    if url is None:
        return Source("unknown", detail=f"an archive URL skillgit cannot name ({raw})")
    return Source("archive", url=url, hash=pick, subdirectory=sub)


def _package_dir() -> Path:
    import skillgit

    return Path(skillgit.__file__).resolve().parent


def _record_hash(path: Path) -> str:
    digest = hashlib.sha256(path.read_bytes()).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _installed_is_checkout(dist: Any, folder: Path) -> bool:
    """True when every installed `skillgit/*.py` (per the RECORD's hashes) is byte-identical to the folder's."""
    checked = 0
    for f in (dist.files if dist is not None else None) or ():
        parts = f.parts
        shipped_data = len(parts) > 2 and parts[1].startswith("_")  # skillgit/_templates: templates/ in a checkout
        if len(parts) < 2 or parts[0] != NAME or not f.name.endswith(".py") or shipped_data or not f.hash:
            continue
        mine = folder.joinpath(*parts)
        if not mine.is_file() or _record_hash(mine) != f"{f.hash.mode}={f.hash.value}":
            return False
        checked += 1
    return checked > 0


def _owner() -> tuple[Any, Any] | None:
    """(the distribution holding the running package, its direct_url.json data or None)."""
    from importlib import metadata

    pkg = _package_dir()
    found: list[tuple[int, Any, Any]] = []
    for dist in metadata.distributions(name=NAME):
        try:
            data = json.loads(dist.read_text("direct_url.json") or "null")
        except ValueError:
            data = None
        owns = False
        if isinstance(data, dict) and isinstance(data.get("dir_info"), dict) and data["dir_info"].get("editable"):
            top = Path(unquote(urlsplit(str(data.get("url", ""))).path))
            owns = top.is_dir() and pkg.is_relative_to(top.resolve())
        if not owns:
            init = next((f for f in dist.files or () if f.parts == (NAME, "__init__.py")), None)
            owns = init is not None and Path(str(dist.locate_file(init))).resolve() == pkg / "__init__.py"
        if owns:  # prefer a record with provenance, then one an installer wrote over a stray .egg-info
            found.append((int(data is not None) * 2 + int(dist.read_text("INSTALLER") is not None), dist, data))
    if not found:
        return None
    _, dist, data = max(found, key=lambda x: x[0])
    return dist, data


def _pin_checkout(src: Source, dist: Any) -> Source:
    """A local source's remote and commit, when the checkout proves the code is that commit (see the contract)."""
    from dataclasses import replace

    from skillgit.errors import SkillgitError
    from skillgit.store.repository import open_repository

    folder = Path(src.folder)
    if not folder.is_dir():
        return replace(src, detail="the folder it was installed from is gone")
    if not src.editable and not _installed_is_checkout(dist, folder):
        return replace(src, detail="the installed files differ from that folder now")
    try:
        repo = open_repository(folder)
    except SkillgitError:
        return replace(src, detail="that folder is not a git checkout")
    try:
        if repo.status_paths(["."]):
            return replace(src, detail="that checkout has uncommitted changes")
        head = repo.rev_parse("HEAD")
        sub = folder.resolve().relative_to(repo.root.resolve()).as_posix()
        remotes = {ref: ref.split("/")[2] for (ref,) in repo.for_each_ref(["refname"], "refs/remotes/")
                   if ref.count("/") >= 3 and not ref.endswith("/HEAD")}
        unreachable = ""  # a remote that has the commit but that pip elsewhere cannot fetch (a path, file://)
        for ref in sorted(remotes, key=lambda r: (remotes[r] != "origin", r)):
            if not repo.is_ancestor(head, ref):
                continue
            for raw in repo.config_get_all(f"remote.{remotes[ref]}.url"):
                url = _clean_url(_scp_to_ssh(raw))
                if url is not None and url.startswith(("https://", "ssh://")):
                    pin = f"git+{url}@{head}" + (f"#subdirectory={sub}" if sub != "." else "")
                    return replace(src, pinned=pin)
                plain = raw if re.fullmatch(r"[\w./~+-]+", raw) else None  # a path (never credentials)
                unreachable = unreachable or f"'{remotes[ref]}' ({url or plain or 'a URL skillgit cannot name'})"
        if unreachable:
            return replace(src, detail=f"its commit is on the remote {unreachable}, which only this machine can "
                                       "reach (push it to an https:// or ssh:// remote)")
        return replace(src, detail="its commit is on none of its remotes (push it first)")
    finally:
        repo.close()


def _scp_to_ssh(url: str) -> str:
    """`git@host:owner/repo.git` (git's scp-like syntax) as `ssh://git@host/owner/repo.git` (what pip reads)."""
    m = re.fullmatch(r"([A-Za-z0-9._-]+@)?([A-Za-z0-9.-]+):(?!//)([A-Za-z0-9._~/-]+)", url)
    return f"ssh://{m[1] or ''}{m[2]}/{m[3]}" if m else url


@lru_cache(maxsize=1)
def source() -> Source:
    """Where the running skillgit came from (see the module contract); computed once per process."""
    owner = _owner()
    if owner is None:
        return Source("unknown", detail="skillgit is not installed (run from a source tree)")
    dist, data = owner
    if data is None:
        return Source("unknown", detail="installed from a package index or an sdist, with no record of its source")
    src = from_direct_url(data)
    return _pin_checkout(src, dist) if src.kind == "local" else src


def main() -> int:
    """`python -m skillgit.provenance`: print where this skillgit came from and how to install it elsewhere."""
    src = source()
    print(f"source: {src.describe()}")
    print(f"requirement: {src.requirement() or '-'}")
    print(f"install: {src.install_hint()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
