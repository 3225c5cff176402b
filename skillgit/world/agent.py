"""The simulated coding agent: `python -m skillgit.world.agent [--prompt-file FILE | PROMPT] [--seed N]
[--sample N] [--output-format text|stream-json]`, run with the workspace as its working directory.

It stands in for a CLI coding agent (Claude Code, Codex, Copilot) offline. Contract:
- Inputs: the prompt, the installed skill package, the workspace. Nothing else: it never opens a verifier (no
  path with a part named like `verify`, `expected` or `solution`, nothing under `tests/` except the
  `tests/test_<module>.py` file it writes to), never touches `.git`, and never writes outside the workspace
  (every path is resolved and checked; a violation is a bug and exits 1).
- The skill package is found in this order (the first hit wins): env `SKILLGIT_SKILL_DIR` (a folder holding
  `SKILL.md` or `AGENTS.md`, or a file); `.claude/skills/*/SKILL.md` and then `.agents/skills/*/SKILL.md` (the
  first in sorted order; the package root is that file's folder); `AGENTS.md`;
  `.github/copilot-instructions.md` plus `.github/instructions/*.instructions.md`; `SKILL.md`. The main files are
  always read; a file under the package's `references/` (any depth, `*.md`) is read only when a file already read
  mentions its path relative to the package root (`references/changelog.md`), as a real agent opens only the
  references its instructions point at (coding.referenced_files).
- Behaviour: the prompt is parsed with coding.parse_request and implemented with the matching recipe (the core is
  always right); each convention (coding.CONVENTIONS) is applied iff the package conveys it, harm concepts make it
  do the wrong thing. Per run, with probability `noise` (+ `dilution_per_line` for every non-empty line of the
  main files beyond `dilution_lines`, at most 0.5) one applicable instruction is not followed (a slip). Reference
  files do not dilute: they are read on demand. All randomness comes from seeded_rng(seed, "agent",
  prompt + sample + package text): the same (seed, prompt, sample, package) always gives the same run.
- Output: `text` prints the final message; `stream-json` prints Claude Code's stream-json events, one JSON object
  per line: `system/init`, `assistant` messages with `text` or `tool_use` blocks (Read, Edit, Write), `user`
  messages with the `tool_result`s, and a final `result` event (`subtype` success, `result`, `num_turns`,
  `total_cost_usd` 0, `usage`). Tool paths are absolute, as Claude Code's are. Exit 0 (also when the request
  is not understood: the final message says so).
- Parameters beyond the argv contract: env `SKILLGIT_AGENT_NOISE` (default 0.06), `SKILLGIT_AGENT_SEED`
  (default seed).
- Like Claude Code it loads the user's profile (user skills, memory, MCP servers, SessionStart hooks:
  `agent_profile`), runs the hooks at start, and names what it loaded at the end of its final message; a fresh
  config home (skillgit's hermetic rollouts) loads nothing. `--version` prints `sim-coder <skillgit version>`.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillgit import __version__
from skillgit.world import agent_profile
from skillgit.world.agent_code import (
    Decisions,
    append_function,
    applicable,
    changelog_entry,
    decide,
    ensure_imports,
    ensure_logger,
    export_name,
    function_source,
    new_module,
    parse_module,
    replace_body,
    tests_for,
)
from skillgit.world.coding import (
    CodingReading,
    Recipe,
    Request,
    parse_request,
    read_coding,
    recipe_for,
    referenced_files,
)
from skillgit.world.common import digest, seeded_rng, tokens_of

NOISE = 0.06
MODEL = "sim-coder"
_FORBIDDEN = re.compile(r"verif|expected|solution", re.IGNORECASE)


class AgentError(Exception):
    """A broken invariant of the agent itself (e.g. a path outside the workspace): a bug, exit 1."""


# ---------------------------------------------------------------------------------------------- the package
@dataclass(frozen=True)
class SkillPackage:
    """The skill as the agent found it: `root` (None when nothing was found), the main files and every
    reference file, by path relative to `root`, and where it came from (`source`)."""

    root: Path | None
    main: tuple[str, ...]
    files: Mapping[str, str]
    source: str

    def opened(self) -> list[str]:
        """Main files, then the references they (transitively) point at."""
        refs = {p: t for p, t in self.files.items() if p not in self.main}
        return list(self.main) + referenced_files("\n".join(self.files[m] for m in self.main), refs)

    def reading(self) -> CodingReading:
        conventions: set[str] = set()
        harms: set[str] = set()
        for path in self.opened():
            r = read_coding(self.files[path])
            conventions |= r.conventions
            harms |= r.harms
        lines = sum(read_coding(self.files[m]).lines for m in self.main)
        return CodingReading(frozenset(conventions), frozenset(harms), lines)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def _package_at(root: Path, main: list[Path], source: str) -> SkillPackage:
    files: dict[str, str] = {}
    for m in main:
        files[m.relative_to(root).as_posix()] = _read_text(m)
    ref_dir = root / "references"
    if ref_dir.is_dir():
        for p in sorted(ref_dir.rglob("*.md")):
            if ".git" not in p.parts and p.is_file():
                files[p.relative_to(root).as_posix()] = _read_text(p)
    return SkillPackage(root, tuple(m.relative_to(root).as_posix() for m in main), files, source)


def find_package(workspace: Path, env: Mapping[str, str]) -> SkillPackage:
    """The installed skill package (order in the module docstring)."""
    explicit = env.get("SKILLGIT_SKILL_DIR", "").strip()
    if explicit:
        p = Path(explicit)
        p = p if p.is_absolute() else workspace / p
        if p.is_file():
            return _package_at(p.parent, [p], "SKILLGIT_SKILL_DIR")
        for name in ("SKILL.md", "AGENTS.md"):
            if (p / name).is_file():
                return _package_at(p, [p / name], "SKILLGIT_SKILL_DIR")
    for pattern in (".claude/skills/*/SKILL.md", ".agents/skills/*/SKILL.md"):
        hits = sorted(workspace.glob(pattern))
        if hits:
            return _package_at(hits[0].parent, [hits[0]], pattern)
    if (workspace / "AGENTS.md").is_file():
        return _package_at(workspace, [workspace / "AGENTS.md"], "AGENTS.md")
    copilot = workspace / ".github" / "copilot-instructions.md"
    if copilot.is_file():
        extra = sorted((workspace / ".github" / "instructions").glob("*.instructions.md"))
        return _package_at(workspace / ".github", [copilot, *extra], ".github/copilot-instructions.md")
    if (workspace / "SKILL.md").is_file():
        return _package_at(workspace, [workspace / "SKILL.md"], "SKILL.md")
    return SkillPackage(None, (), {}, "none")


# ---------------------------------------------------------------------------------------------- decisions
# ---------------------------------------------------------------------------------------------- the workspace
@dataclass
class Session:
    """The workspace (every path checked) and the event log of one run."""

    root: Path
    session_id: str
    events: list[dict[str, Any]] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    out_tokens: int = 0
    turns: int = 0

    def path(self, rel: str, *, reading: bool) -> Path:
        p = (self.root / rel).resolve()
        if p != self.root and self.root not in p.parents:
            raise AgentError(f"refusing a path outside the workspace: {rel}")
        parts = p.relative_to(self.root).parts
        if ".git" in parts:
            raise AgentError(f"refusing to touch .git: {rel}")
        if any(_FORBIDDEN.search(part) for part in parts):
            raise AgentError(f"refusing a verifier-like path: {rel}")
        if reading and parts and parts[0] == "tests" and not re.fullmatch(r"test_\w+\.py", parts[-1]):
            raise AgentError(f"refusing to read a test file it did not write: {rel}")
        if reading and parts and parts[0] == "tests" and len(parts) != 2:
            raise AgentError(f"refusing to read a test file it did not write: {rel}")
        return p

    def _assistant(self, content: list[dict[str, Any]], stop: str) -> None:
        self.turns += 1
        text = json.dumps(content)
        self.out_tokens += tokens_of(text)
        self.events.append({"type": "assistant", "message": {
            "id": f"msg_{digest(self.session_id, len(self.events))}", "type": "message", "role": "assistant",
            "model": MODEL, "content": content, "stop_reason": stop,
            "usage": {"input_tokens": 0, "output_tokens": tokens_of(text)}},
            "parent_tool_use_id": None, "session_id": self.session_id})

    def say(self, text: str) -> None:
        self._assistant([{"type": "text", "text": text}], "end_turn")

    def tool(self, name: str, tool_input: dict[str, Any], result: str) -> None:
        tool_id = f"toolu_{digest(self.session_id, 'tool', len(self.events))}"
        self._assistant([{"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}], "tool_use")
        self.events.append({"type": "user", "message": {"role": "user", "content": [
            {"tool_use_id": tool_id, "type": "tool_result", "content": result}]},
            "parent_tool_use_id": None, "session_id": self.session_id})

    def read_skill_file(self, path: Path) -> None:
        """Record reading a skill file (it may live outside the workspace: SKILLGIT_SKILL_DIR)."""
        if ".git" in path.parts:
            raise AgentError(f"refusing to touch .git: {path}")
        self.tool("Read", {"file_path": str(path)}, _numbered(_read_text(path)))

    def read(self, rel: str) -> str | None:
        p = self.path(rel, reading=True)
        if not p.is_file():
            return None
        text = p.read_text(encoding="utf-8")
        self.tool("Read", {"file_path": str(p)}, _numbered(text))
        return text

    def write(self, rel: str, before: str | None, after: str) -> None:
        if before == after:
            return
        p = self.path(rel, reading=False)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(after, encoding="utf-8")
        if before is None:
            self.tool("Write", {"file_path": str(p), "content": after}, f"File created successfully at: {p}")
        else:
            old, new = _edit_strings(before, after)
            self.tool("Edit", {"file_path": str(p), "old_string": old, "new_string": new},
                      f"The file {p} has been updated.")
        if rel not in self.changed:
            self.changed.append(rel)


def _numbered(text: str, limit: int = 4000) -> str:
    out = "\n".join(f"{i:>6}\t{line}" for i, line in enumerate(text.split("\n"), 1))
    return out if len(out) <= limit else out[:limit] + "\n… (truncated)"


def _edit_strings(before: str, after: str) -> tuple[str, str]:
    """The smallest line range that differs, widened by one line of context when it would be empty."""
    a, b = before.split("\n"), after.split("\n")
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    j = 0
    while j < min(len(a), len(b)) - i and a[len(a) - 1 - j] == b[len(b) - 1 - j]:
        j += 1
    lo = max(0, i - (1 if i == len(a) - j else 0))
    return "\n".join(a[lo:len(a) - j]), "\n".join(b[lo:len(b) - j])


# ---------------------------------------------------------------------------------------------- a run
@dataclass(frozen=True)
class AgentRun:
    """One run: the final message, the stream-json events (without init/result), the files it changed (relative
    paths, in order), the package files it opened, and its decisions (for tests and debugging)."""

    final: str
    events: tuple[dict[str, Any], ...]
    changed: tuple[str, ...]
    opened: tuple[str, ...]
    decisions: Decisions | None
    session_id: str
    out_tokens: int
    in_tokens: int
    turns: int


def run_agent(workspace: Path, prompt: str, *, seed: int = 0, sample: int = 0, noise: float = NOISE,
              env: Mapping[str, str] | None = None) -> AgentRun:
    """Carry out `prompt` in `workspace` (see the module docstring)."""
    root = workspace.resolve()
    env = os.environ if env is None else env
    profile = agent_profile.describe(agent_profile.load(env))
    package = find_package(root, env)
    package_text = "\x1e".join(f"{p}\x1f{t}" for p, t in sorted(package.files.items()))
    sid = "sim-" + digest(seed, sample, prompt, package_text)
    session = Session(root, sid)
    opened = package.opened()
    for rel in opened:
        assert package.root is not None
        session.read_skill_file(package.root / rel)
    reading = package.reading()
    request = parse_request(prompt)
    recipe = recipe_for(request) if request else None
    decisions = None

    def done(final: str) -> AgentRun:
        final = f"{final} {profile}" if profile else final
        session.say(final)
        return AgentRun(final, tuple(session.events), tuple(session.changed), tuple(opened), decisions, sid,
                        session.out_tokens, tokens_of(prompt) + tokens_of(package_text), session.turns)

    if request is None:
        return done("I could not understand the request: I handle 'Add a function `f(x)` to `pkg/mod.py` that …', "
                    "'Fix `f` in `pkg/mod.py`: …' and 'Change `f` in `pkg/mod.py` so that it …'. Nothing changed.")
    if recipe is None:
        return done(f"I do not know how to implement this behaviour: {request.behaviour!r}. Nothing changed.")
    if request.kind == "add" and len(request.params) != len(recipe.hints):
        return done(f"The signature {request.name}({', '.join(request.params)}) does not fit what was asked "
                    f"(expected {len(recipe.hints)} parameter(s)). Nothing changed.")
    rng = seeded_rng(seed, "agent", f"{prompt}\x1f{sample}\x1f{package_text}")
    decisions = decide(request, recipe, reading, rng, noise)
    imports = list(recipe.imports)
    try:
        module_after = _edit_module(session, request, recipe, decisions, imports)
    except _Refused as refused:
        return done(str(refused))
    verb = {"add": "added", "fix": "fixed", "change": "changed"}[request.kind]
    done_list = [f"{verb} `{request.name}` in {request.module_path}"]
    done_list += _follow_up(session, request, recipe, decisions, module_after, imports)
    final = "Done: " + "; ".join(done_list) + ". Files changed: " + ", ".join(session.changed) + "."
    return done(final)


class _Refused(Exception):
    """The request cannot be carried out in this workspace: the agent says why and changes nothing."""


def _edit_module(session: Session, request: Request, recipe: Recipe, decisions: Decisions,
                 imports: list[str]) -> str:
    """Add or rewrite the requested function in its module (written); the module's new text."""
    module_before = session.read(request.module_path)
    if request.kind == "add":
        func = function_source(request, recipe, decisions)
        if module_before is None:
            module_after = new_module(request, func, imports)
        else:
            module_after = append_function(ensure_imports(module_before, imports), func)
    else:
        if module_before is None:
            raise _Refused(f"{request.module_path} does not exist, so there is no `{request.name}` to "
                           f"{request.kind}. Nothing changed.")
        replaced = replace_body(ensure_imports(module_before, imports), request, recipe, decisions)
        if replaced is None:
            raise _Refused(f"{request.module_path} has no top-level function `{request.name}`. Nothing changed.")
        module_after, params = replaced
        if len(params) != len(recipe.hints):
            raise _Refused(f"`{request.name}` takes {len(params)} parameter(s); this change needs "
                           f"{len(recipe.hints)}. Nothing changed.")
    if request.report and decisions.has("logging"):
        module_after = ensure_logger(module_after)
    session.write(request.module_path, module_before, module_after)
    return module_after


def _follow_up(session: Session, request: Request, recipe: Recipe, decisions: Decisions, module_after: str,
               imports: list[str]) -> list[str]:
    """The conventions around the code the agent follows (export, changelog, tests); what it did, in words."""
    said = []
    if decisions.has("export"):
        init_rel = f"{request.package}/__init__.py"
        init_before = session.read(init_rel) or ""
        session.write(init_rel, init_before if (session.root / init_rel).exists() else None,
                      export_name(init_before, request))
        said.append(f"exported it in {request.package}.__all__")
    if decisions.has("changelog"):
        log_before = session.read("CHANGELOG.md")
        session.write("CHANGELOG.md", log_before,
                      changelog_entry(log_before or "", request, decisions.has("changelog_format")))
        said.append("added a CHANGELOG.md entry")
    if decisions.has("tests"):
        tree = parse_module(module_after)
        node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == request.name)
        func_src = ast.get_source_segment(module_after, node) or ""
        test_before = session.read(request.test_path)
        existing = set(re.findall(r"^def (test_\w+)", test_before or "", re.MULTILINE))
        test_imports, block = tests_for(request, recipe, func_src, imports, decisions, existing)
        head = test_before if test_before is not None else f'"""Tests for {request.module}."""\n'
        session.write(request.test_path, test_before, append_function(ensure_imports(head, test_imports), block))
        said.append(f"added tests in {request.test_path}" + (" (marked skip)" if "skip_tests" in decisions.harms
                                                              else ""))
    return said


# ---------------------------------------------------------------------------------------------- CLI
def stream_events(run: AgentRun, cwd: Path, duration_ms: int) -> list[dict[str, Any]]:
    """The full stream-json event list: init, the run's events, result."""
    init = {"type": "system", "subtype": "init", "cwd": str(cwd), "session_id": run.session_id,
            "tools": ["Read", "Edit", "Write"], "mcp_servers": [], "model": MODEL, "permissionMode": "default",
            "apiKeySource": "none"}
    result = {"type": "result", "subtype": "success", "is_error": False, "duration_ms": duration_ms,
              "duration_api_ms": 0, "num_turns": run.turns, "result": run.final, "session_id": run.session_id,
              "total_cost_usd": 0, "usage": {"input_tokens": run.in_tokens, "cache_creation_input_tokens": 0,
                                             "cache_read_input_tokens": 0, "output_tokens": run.out_tokens}}
    return [init, *run.events, result]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m skillgit.world.agent",
                                     description="The simulated coding agent of skillgit's offline world.")
    parser.add_argument("prompt", nargs="?", default=None, help="the prompt (or use --prompt-file)")
    parser.add_argument("--prompt-file", default=None)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--sample", type=int, default=0)
    parser.add_argument("--output-format", choices=("text", "stream-json"), default="text")
    parser.add_argument("--version", action="version", version=f"sim-coder {__version__}")
    args = parser.parse_args(argv)
    if args.prompt_file:
        prompt = Path(args.prompt_file).read_text(encoding="utf-8")
    elif args.prompt is not None:
        prompt = args.prompt
    else:
        parser.error("give the prompt as the last argument or with --prompt-file")
    seed = args.seed if args.seed is not None else int(os.environ.get("SKILLGIT_AGENT_SEED", "0") or 0)
    noise = float(os.environ.get("SKILLGIT_AGENT_NOISE", str(NOISE)))
    started = time.monotonic()
    agent_profile.run_session_start(agent_profile.load(os.environ), Path.cwd(), os.environ)
    try:
        run = run_agent(Path.cwd(), prompt, seed=seed, sample=args.sample, noise=noise)
    except AgentError as exc:
        print(f"sim-coder: {exc}", file=sys.stderr)
        return 1
    if args.output_format == "text":
        print(run.final)
    else:
        for event in stream_events(run, Path.cwd(), int((time.monotonic() - started) * 1000)):
            print(json.dumps(event, ensure_ascii=False))
    return 0


__all__ = [
    "AgentRun",
    "Decisions",
    "SkillPackage",
    "applicable",
    "decide",
    "find_package",
    "main",
    "run_agent",
    "stream_events",
]

if __name__ == "__main__":
    sys.exit(main())
