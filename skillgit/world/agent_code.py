"""What the simulated coding agent decides and writes for one request (`skillgit.world.agent` runs it).

- `decide`: which conventions of the skill it follows and which harms it acts on for this request, and the one
  slip a run may make (see the `agent` module contract for the rates); `applicable` lists what can matter.
- Source edits on Python text (pure functions, `ast`-checked): the new function or the replaced body per the
  decisions, imports merged into existing ones, the module logger, `__all__`.
- `changelog_entry`: CHANGELOG.md with the request's entry under `## Unreleased` (Keep a Changelog style when
  the skill asks for it).
- `tests_for`: the tests it adds, their expected values from running its own implementation.
"""

from __future__ import annotations

import ast
import contextlib
import io
import logging
import re
import textwrap
import threading
from dataclasses import dataclass
from typing import Any

from skillgit.world.coding import CodingReading, Recipe, Request

DILUTION_LINES = 40
DILUTION_PER_LINE = 0.005
_INVALID_HARMS = ("return_none", "assert_validation", "broad_except")


@dataclass(frozen=True)
class Decisions:
    """What the agent does for one request: conventions followed, harms acted on, and the slip (if any)."""

    conventions: frozenset[str]
    harms: frozenset[str]
    slipped: str = ""

    def has(self, name: str) -> bool:
        return name in self.conventions

    def to_dict(self) -> dict[str, Any]:
        return {"conventions": sorted(self.conventions), "harms": sorted(self.harms), "slipped": self.slipped}


def applicable(request: Request, recipe: Recipe) -> tuple[set[str], set[str]]:
    """(conventions, harms) that can change the result of this request (a slip elsewhere has no effect)."""
    rejects = bool(request.invalid and recipe.guard) or any("__INVALID__" in line for line in recipe.body)
    conventions = {"changelog", "changelog_format", "tests"}
    harms = {"print_debug", "no_changelog", "skip_tests"}
    if request.kind == "add":
        conventions |= {"docstring", "export", "type_hints"}
        harms.add("no_docstring")
    if rejects:
        conventions.add("valueerror")
        harms |= set(_INVALID_HARMS)
    if request.report:
        conventions.add("logging")
    return conventions, harms


def decide(request: Request, recipe: Recipe, reading: CodingReading, rng, noise: float) -> Decisions:
    conventions, harms = applicable(request, recipe)
    followed = set(reading.conventions) & conventions
    acted = set(reading.harms) & harms
    # Harms override the convention they contradict.
    if "no_docstring" in acted:
        followed.discard("docstring")
    if "no_changelog" in acted:
        followed -= {"changelog", "changelog_format"}
    if "skip_tests" in acted and "tests" not in followed:
        acted.discard("skip_tests")  # nothing to skip
    rate = min(0.5, noise + DILUTION_PER_LINE * max(0, reading.lines - DILUTION_LINES))
    # Draw both numbers every time so the stream does not depend on which branch runs.
    slip, pick = rng.random(), rng.random()
    slipped = ""
    candidates = sorted(followed) + sorted(acted)
    if slip < rate and candidates:
        slipped = candidates[int(pick * len(candidates))]
        followed.discard(slipped)
        acted.discard(slipped)
        if slipped == "changelog":
            followed.discard("changelog_format")
    return Decisions(frozenset(followed), frozenset(acted), slipped)


# ---------------------------------------------------------------------------------------------- code edits
def _sub(code: str, params: tuple[str, ...]) -> str:
    for i, p in enumerate(params):
        code = code.replace(f"__P{i}__", p)
    return code


def _invalid_action(request: Request, recipe: Recipe, params: tuple[str, ...], d: Decisions) -> str:
    p = params[recipe.invalid_param] if recipe.invalid_param < len(params) else "value"
    if "assert_validation" in d.harms:
        return f'assert False, f"{request.name}: invalid {p}: {{{p}!r}}"'
    if d.has("valueerror") and "return_none" not in d.harms:
        return f'raise ValueError(f"{request.name}: invalid {p}: {{{p}!r}}")'
    return "return None"


def _returns_none(request: Request, recipe: Recipe, d: Decisions) -> bool:
    conventions, _ = applicable(request, recipe)
    rejects = "valueerror" in conventions
    return rejects and ("broad_except" in d.harms or not d.has("valueerror") or "return_none" in d.harms) \
        and "assert_validation" not in d.harms


def body_lines(request: Request, recipe: Recipe, params: tuple[str, ...], d: Decisions) -> list[str]:
    """The function body (no docstring), 4-space indented, per the decisions."""
    lines: list[str] = []
    if request.invalid and recipe.guard:
        cond = _sub(recipe.guard, params)
        action = _invalid_action(request, recipe, params, d)
        if action.startswith("assert False"):
            lines.append(f"assert not ({cond}), " + action.split(", ", 1)[1])
        else:
            lines += [f"if {cond}:", "    " + action]
    for raw in recipe.body:
        indent = raw[: len(raw) - len(raw.lstrip())]
        code = raw.strip()
        if code == "__INVALID__":
            lines.append(indent + _invalid_action(request, recipe, params, d))
        elif code == "__REPORT__":
            message, arg = recipe.report
            if d.has("logging"):
                lines.append(indent + f"logger.warning({message!r}, {arg})")
            else:
                lines.append(indent + f"print({message!r} % ({arg},))")
        else:
            lines.append(indent + _sub(code, params))
    if "broad_except" in d.harms:
        lines = ["try:", *("    " + line for line in lines), "except Exception:", "    return None"]
    if "print_debug" in d.harms:
        lines.insert(0, f'print("DEBUG {request.name}:", ' + ", ".join(params) + ")")
    return ["    " + line if line else "" for line in lines]


def _docstring(request: Request, d: Decisions, returns_none: bool) -> list[str]:
    words = request.behaviour.split(" ", 1)
    verb = words[0][:-1] if words[0].endswith("s") and not words[0].endswith("ss") else words[0]
    text = verb[:1].upper() + verb[1:] + (" " + words[1] if len(words) > 1 else "") + "."
    if request.invalid:
        text += (f"\n\nReturns None when the input is invalid: {request.invalid}" if returns_none
                 else f"\n\nRaises ValueError: {request.invalid}")
    paragraphs = [textwrap.wrap(p, 100) for p in text.split("\n\n")]
    lines = [line for para in paragraphs for line in [*para, ""]][:-1]
    if len(lines) == 1:
        return [f'    """{lines[0]}"""']
    return [f'    """{lines[0]}', *("    " + line if line else "" for line in lines[1:]), '    """']


def function_source(request: Request, recipe: Recipe, d: Decisions) -> str:
    """A new function for an `add` request."""
    params = request.params
    returns_none = _returns_none(request, recipe, d)
    if d.has("type_hints"):
        sig = ", ".join(f"{p}: {t}" for p, t in zip(params, recipe.hints))
        ret = f" -> {recipe.returns}" + (" | None" if returns_none else "")
    else:
        sig, ret = ", ".join(params), ""
    lines = [f"def {request.name}({sig}){ret}:"]
    if d.has("docstring"):
        lines += _docstring(request, d, returns_none)
    lines += body_lines(request, recipe, params, d)
    return "\n".join(lines) + "\n"


def _top_level_end_of_imports(tree: ast.Module) -> int:
    """Line number (1-based) after which new imports go: the last top-level import, else the docstring, else 0."""
    end = 0
    for node in tree.body:
        docstring = (node is tree.body[0] and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                     and isinstance(node.value.value, str))
        if isinstance(node, (ast.Import, ast.ImportFrom)) or docstring:
            end = node.end_lineno or node.lineno
    return end


_PARSE_LOCK = threading.Lock()


def parse_module(source: str) -> ast.Module:
    """`source` parsed by `ast.parse`, one thread at a time. CPython 3.11 keeps the AST constructor's recursion
    depth per interpreter, not per thread: two threads parsing at once (the simulated agent runs in threads when
    it runs in-process) can fail with "SystemError: AST constructor recursion depth mismatch"
    (python/cpython#106905)."""
    with _PARSE_LOCK:
        return ast.parse(source)


def ensure_imports(source: str, imports: list[str]) -> str:
    """`source` with every import of `imports` (`import x` / `from m import a, b`) present, merged into an
    existing one-line `from m import …` when there is one."""
    for imp in imports:
        source = _ensure_import(source, imp)
    return source


def _ensure_import(source: str, imp: str) -> str:
    tree = parse_module(source)
    m = re.fullmatch(r"from ([\w.]+) import (.+)", imp)
    if m:
        merged = _merged_from(source, tree, m.group(1), [n.strip() for n in m.group(2).split(",")])
        if merged is not None:
            return merged
    elif any(isinstance(n, ast.Import) and any(a.name == imp.split()[1] for a in n.names) for n in tree.body):
        return source
    return _inserted(source, tree, imp, plain=not m)


def _merged_from(source: str, tree: ast.Module, module: str, names: list[str]) -> str | None:
    """`source` with `names` in its one-line `from module import …` (unchanged when all are there); None when
    there is no such line to merge into."""
    node = next((n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == module and n.level == 0), None)
    if node is None:
        return None
    have = [a.name for a in node.names]
    missing = [n for n in names if n not in have]
    if not missing:
        return source
    if node.lineno != node.end_lineno:
        return None
    lines = source.split("\n")
    lines[node.lineno - 1] = f"from {module} import " + ", ".join(have + missing)
    return "\n".join(lines)


def _inserted(source: str, tree: ast.Module, imp: str, plain: bool) -> str:
    """`source` with the line `imp` added where a person would put it."""
    at = _top_level_end_of_imports(tree)
    has_imports = any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in tree.body)
    if plain and has_imports:
        # `import x` goes with the plain imports: after the last one, else before the first `from` import.
        plains = [n for n in tree.body if isinstance(n, ast.Import)]
        froms = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module != "__future__"]
        if plains:
            at = plains[-1].end_lineno or plains[-1].lineno
        elif froms:
            at = froms[0].lineno - 1
    new = [imp] if has_imports else ["", imp]
    if not has_imports and at == 0:
        new = [imp, ""]
    lines = source.split("\n")
    lines[at:at] = new
    return "\n".join(lines)


def ensure_logger(source: str) -> str:
    if "logging.getLogger(__name__)" in source:
        return source
    source = ensure_imports(source, ["import logging"])
    tree = parse_module(source)
    at = _top_level_end_of_imports(tree)
    lines = source.split("\n")
    lines[at:at] = ["", "logger = logging.getLogger(__name__)"]
    return "\n".join(lines)


def append_function(source: str, func: str) -> str:
    return source.rstrip("\n") + "\n\n\n" + func


def new_module(request: Request, func: str, imports: list[str]) -> str:
    head = f'"""{request.module}: helpers of the {request.package} package."""\n'
    source = ensure_imports(head, imports) if imports else head
    return append_function(source, func)


def replace_body(source: str, request: Request, recipe: Recipe, d: Decisions) -> tuple[str, tuple[str, ...]] | None:
    """(`source` with the body of function `request.name` replaced (signature and docstring kept), its
    parameters), or None when the module has no such top-level function."""
    tree = parse_module(source)
    node = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == request.name), None)
    if node is None:
        return None
    params = tuple(a.arg for a in node.args.args)
    body = node.body
    first = body[0]
    keep_doc = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(
        first.value.value, str)
    start = (first.end_lineno or first.lineno) if keep_doc else body[0].lineno - 1
    end = node.end_lineno or node.lineno
    lines = source.split("\n")
    lines[start:end] = body_lines(request, recipe, params, d)
    return "\n".join(lines), params


def export_name(source: str, request: Request) -> str:
    """The package `__init__.py` with `request.name` imported from its module and listed in `__all__`."""
    source = ensure_imports(source, [f"from {request.module} import {request.name}"])
    tree = parse_module(source)
    lines = source.split("\n")
    node = next((n for n in tree.body if isinstance(n, ast.Assign)
                 and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)), None)
    if node is None:
        return source.rstrip("\n") + f"\n\n__all__ = [{request.name!r}]\n".replace("'", '"')
    names: list[str] = []
    if isinstance(node.value, (ast.List, ast.Tuple)):
        names = [e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    if request.name in names:
        return source
    names.append(request.name)
    items = ", ".join(f'"{n}"' for n in names)
    text = f"__all__ = [{items}]"
    if (node.end_lineno or node.lineno) > node.lineno or len(text) > 110:
        # keep a one-name-per-line list as it was written (and never write an over-long line)
        text = "__all__ = [\n" + "".join(f'    "{n}",\n' for n in names) + "]"
    lines[node.lineno - 1:node.end_lineno or node.lineno] = text.split("\n")
    return "\n".join(lines)


_KIND_HEADING = {"add": "Added", "change": "Changed", "fix": "Fixed"}
_HEADING_ORDER = ("Added", "Changed", "Deprecated", "Removed", "Fixed", "Security")


def _summary(request: Request) -> str:
    text = request.behaviour if request.kind == "add" else (
        f"now {request.behaviour}" if request.kind == "change" else f"fix: {request.behaviour}")
    return textwrap.shorten(text, 90, placeholder=" …").rstrip(".") + "."


def changelog_entry(text: str, request: Request, formatted: bool) -> str:
    """CHANGELOG.md with an entry for `request` under `## Unreleased` (created if missing); `formatted`: Keep a
    Changelog style (bullet naming the function in backticks under `### Added|Changed|Fixed`)."""
    lines = text.rstrip("\n").split("\n") if text.strip() else ["# Changelog"]
    at = _unreleased(lines)
    end = next((i for i in range(at + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    section = _trimmed(lines[at + 1:end])
    if formatted:
        _add_formatted(section, request)
    else:
        section.append(f"- {_KIND_HEADING[request.kind]} {request.name}.")
    new = lines[:at + 1] + [""] + section + ([""] if end < len(lines) else []) + lines[end:]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(new)) + "\n"


def _unreleased(lines: list[str]) -> int:
    """The index of the `## Unreleased` heading, inserted before the first release when missing."""
    at = next((i for i, line in enumerate(lines) if re.match(r"##\s+unreleased\b", line.strip(), re.IGNORECASE)), None)
    if at is None:
        at = next((i for i, line in enumerate(lines) if line.startswith("## ")), len(lines))
        lines[at:at] = ["## Unreleased", ""]
    return at


def _trimmed(section: list[str]) -> list[str]:
    """The section's lines without leading and trailing blank lines."""
    while section and not section[0].strip():
        section.pop(0)
    while section and not section[-1].strip():
        section.pop()
    return section


def _add_formatted(section: list[str], request: Request) -> None:
    """Add the Keep a Changelog bullet under its `### Added|Changed|Fixed` heading (made, in order, if missing)."""
    heading = _KIND_HEADING[request.kind]
    bullet = f"- `{request.name}` ({request.module_path}): {_summary(request)}"
    h = next((i for i, line in enumerate(section) if line.strip() == f"### {heading}"), None)
    if h is not None:
        e = next((i for i in range(h + 1, len(section)) if section[i].startswith("### ")), len(section))
        while e > h + 1 and not section[e - 1].strip():
            e -= 1
        section[e:e] = [bullet]
        return
    rank = _HEADING_ORDER.index(heading)
    later = next((i for i, line in enumerate(section) if line.startswith("### ")
                  and line[4:].strip() in _HEADING_ORDER and _HEADING_ORDER.index(line[4:].strip()) > rank), None)
    if later is None:
        section += ([""] if section else []) + [f"### {heading}", bullet]
    else:
        section[later:later] = [f"### {heading}", bullet, ""]


# ---------------------------------------------------------------------------------------------- tests
def _scratch_namespace(func: str, imports: list[str]) -> dict[str, Any]:
    """Run the agent's own function in a scratch namespace (stdout captured: a debug print must not reach the
    event stream)."""
    scratch = logging.getLogger("skillgit.world.agent.scratch")
    scratch.propagate = False
    if not scratch.handlers:
        scratch.addHandler(logging.NullHandler())
    ns: dict[str, Any] = {"logger": scratch}
    with contextlib.redirect_stdout(io.StringIO()):
        exec("\n".join([*imports, "", func]), ns)  # noqa: S102 - the agent runs the code it just wrote
    return ns


def tests_for(request: Request, recipe: Recipe, func: str, imports: list[str], d: Decisions,
               existing: set[str]) -> tuple[list[str], str]:
    """(imports, test functions) the agent adds to `tests/test_<module>.py`. Expected values come from running
    its own implementation on the recipe's example arguments."""
    ns = _scratch_namespace(func, imports)
    fn = ns[request.name]
    asserts = []
    for args in recipe.examples:
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                result = fn(*(eval(a, dict(ns)) for a in args))
            except Exception as exc:  # noqa: BLE001 - its own code failed: it does not assert that example
                result = exc
        if isinstance(result, Exception):
            continue
        asserts.append(f"    assert {request.name}({', '.join(args)}) == {result!r}")
    suffix = {"add": "", "fix": "_regression", "change": "_new_behaviour"}[request.kind]
    funcs: list[tuple[str, list[str]]] = []
    if asserts:
        funcs.append((f"test_{request.name}{suffix}", asserts))
    needs_pytest = False
    if d.has("valueerror") and request.invalid and recipe.invalid_example:
        call = f"{request.name}({', '.join(recipe.invalid_example)})"
        funcs.append((f"test_{request.name}_rejects_invalid_input",
                      ["    with pytest.raises(ValueError):", f"        {call}"]))
        needs_pytest = True
    skip = "skip_tests" in d.harms
    needs_pytest = needs_pytest or skip
    blocks = []
    for name, body in funcs:
        unique, n = name, 2
        while unique in existing:
            unique, n = f"{name}_{n}", n + 1
        deco = ['@pytest.mark.skip(reason="slow; run by hand")'] if skip else []
        blocks.append("\n".join([*deco, f"def {unique}():", *body]))
    test_imports = (["import pytest"] if needs_pytest else []) + [f"from {request.module} import {request.name}"]
    return test_imports, "\n\n\n".join(blocks) + "\n"
