"""The simulated agent teacher: `python -m skillgit.world.agent_teacher` (the `simulated` preset of
`model.teacher_backend: agent`, see skillgit/teacher).

Run in a teaching step's working folder, it does what a coding agent asked to teach would do, offline:
1. reads `evidence/README.md`, `evidence/limits.json`, every `evidence/trajectories/*.md`,
   `evidence/rejected_edits.md`, `evidence/meta_skill.md` and the package under `skill/`;
2. decides what to change with the simulated world's teacher knowledge only — the same eyes and repertoire as the
   simulated chat teacher (`agentic_teacher` for coding trajectories, `teacher` for the text world): symptoms read
   from the feedback and the diffs it is shown, never the hidden rules, the verifiers or any val or test item. Like
   that teacher it can be wrong (vague and harmful ideas, wordings that do not land), and it keeps within
   `max_edits` and skips ideas listed in `rejected_edits.md` or noted "avoid:" in the meta skill. Unlike the chat
   teacher it keeps SKILL.md short: what it adds goes to reference files (the repertoire's `references/<topic>.md`,
   else `references/conventions.md`) with a line in SKILL.md pointing at each;
3. edits the files under `skill/` (an append to a missing file under `new_files` creates it);
4. when `skillgit-try` is on its PATH, tries its package on the first failed training task and reports the verdict;
5. prints Claude Code's stream-json (tool calls and results, a final message, a `result` event with usage), so
   skillgit reads its transcript like a real agent's.
Every random choice is seeded by `--seed` and the evidence's content: the same step gives the same edits.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from skillgit import package, patch, prompts
from skillgit.config import SimulatedCfg
from skillgit.types import Edit
from skillgit.world import agentic_teacher
from skillgit.world.common import digest, seeded_rng, tokens_of
from skillgit.world.lexicon import norm
from skillgit.world.teacher import SimulatedTeacher

__version__ = "0.1"


class _Transcript:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.n = 0
        self.read_chars = 0

    def call(self, name: str, arguments: dict[str, Any], result: str, error: bool = False) -> None:
        self.n += 1
        call_id = f"toolu_{self.n:03d}"
        self.events.append({"type": "assistant", "message": {"content": [
            {"type": "tool_use", "id": call_id, "name": name, "input": arguments}]}})
        self.events.append({"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": call_id, "content": result, "is_error": error}]}})

    def say(self, text: str) -> None:
        self.events.append({"type": "assistant", "message": {"content": [{"type": "text", "text": text}]}})


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def _package(folder: Path) -> dict[str, str]:
    files = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink():
            files[path.relative_to(folder).as_posix()] = _read(path)
    return files


def teach(work: Path, seed: int, transcript: _Transcript) -> str:
    """Edit `work/skill/` from `work/evidence/`; returns the final message."""
    evidence = work / "evidence"
    for name in ("README.md", "limits.json", "rejected_edits.md", "meta_skill.md"):
        text = _read(evidence / name)
        transcript.read_chars += len(text)
        transcript.call("Read", {"file_path": f"evidence/{name}"}, f"({len(text.splitlines())} lines)")
    try:
        limits = json.loads(_read(evidence / "limits.json") or "{}")
    except ValueError:
        limits = {}
    trajectories = [_read(p) for p in sorted((evidence / "trajectories").glob("*.md"))]
    transcript.read_chars += sum(map(len, trajectories))
    transcript.call("Glob", {"pattern": "evidence/trajectories/*.md"}, f"{len(trajectories)} files")
    files = _package(work / "skill")
    transcript.call("Glob", {"pattern": "skill/**"}, "\n".join(files) or "(empty)")
    main = package.MAIN if package.MAIN in files else next(iter(files), package.MAIN)
    bundled = len(files) > 1 or main != package.MAIN
    skill = package.bundle(files, main) if bundled else files.get(main, "")
    rejected = _read(evidence / "rejected_edits.md")
    meta = _read(evidence / "meta_skill.md")
    text = "\n".join([prompts.block_skill(skill), prompts.block_budget(int(limits.get("max_edits", 4))),
                      rejected if rejected.lstrip().startswith("<rejected_edits") else "",
                      prompts.block_meta_skill("" if meta.startswith("(none") else meta), *trajectories])
    rng = seeded_rng(seed, "agent-teacher", digest(text))
    answer = SimulatedTeacher(SimulatedCfg(seed=seed)).answer("reflect", text, rng)
    edits, _ = patch.parse_edits(answer, source_type="agent")
    edits = _to_references(edits, agentic_teacher._Prompt.parse(text), int(limits.get("max_edits", 4)))
    new_files = tuple(limits.get("new_files") or package.DEFAULT_NEW_FILES)
    after, results = patch.apply_to_skill(skill, edits, new_files=new_files)
    done = 0
    for result in results:
        edit = result.edit
        where = f"skill/{edit.file or main}"
        transcript.call("Edit", {"file_path": where, "op": edit.op, "old_string": edit.target,
                                 "new_string": edit.content}, result.reason or "ok", error=not result.applied)
        done += result.applied
    for path, new_text in package.parse(after, main).files:
        if files.get(path) != new_text:
            target = work / "skill" / package.check_path(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(new_text, encoding="utf-8")
    summary = str(answer.get("failure_summary") or answer.get("success_patterns") or "")
    tried = _try_one(trajectories, transcript) if done else ""
    return (f"Read {len(trajectories)} trajectories. {summary}. Changed {done} place(s) in the package: "
            + "; ".join(r.edit.summary(60) for r in results if r.applied) + "." + (f" {tried}" if tried else ""))


CONVENTIONS = agentic_teacher.Idea("", "references/conventions.md",
                                   "Follow the conventions in references/conventions.md.", "# Conventions")


def _to_references(edits: list[Edit], seen: agentic_teacher._Prompt, budget: int) -> list[Edit]:
    """An agent with the package in front of it keeps SKILL.md short: an idea it adds to SKILL.md goes to a
    reference file instead — the repertoire's own file for that convention when it has one it was not told to
    avoid, else `references/conventions.md` — created with its heading when missing, with a SKILL.md line pointing
    at it unless one does already. Deletions and replacements stay where they are. A move and its pointer count as
    two edits: ideas are kept in the teacher's order while they fit `budget`."""
    groups: list[list[Edit]] = []
    created: set[str] = set()
    pointed: set[str] = set()
    for edit in edits:
        if edit.op not in ("append", "insert_after") or edit.file:
            groups.append([edit])
            continue
        idea = _reference_idea(edit, seen) or CONVENTIONS
        text = idea.text or edit.content
        new = idea.file not in seen.files and idea.file not in created
        created.add(idea.file)
        group = [Edit("append", f"{idea.heading}\n\n{text}" if new else text, rationale=f"{edit.rationale}; the "
                      f"details belong in {idea.file}", source_type="agent", file=idea.file)]
        if idea.file not in seen.files.get(agentic_teacher.MAIN, "") and idea.file not in pointed:
            pointed.add(idea.file)
            group.append(Edit("append", idea.mention, rationale=f"point the agent at {idea.file}",
                              source_type="agent"))
        groups.append(group)
    out: list[Edit] = []
    for group in groups:
        if len(out) + len(group) <= budget:
            out.extend(group)
    return out


def _reference_idea(edit: Edit, seen: agentic_teacher._Prompt) -> agentic_teacher.Idea | None:
    for fixes in agentic_teacher.REPERTOIRE.values():
        main = {norm(i.text) for i in fixes.good if i.file == agentic_teacher.MAIN}
        refs = [i for i in fixes.good if i.file != agentic_teacher.MAIN and seen.allowed(i)]
        if refs and norm(edit.content) in main:
            return refs[0]
    return None


def _try_one(trajectories: list[str], transcript: _Transcript) -> str:
    """Try the changed package on the first failed training task with `skillgit-try`, when it is on PATH."""
    program = shutil.which("skillgit-try")
    failed = [attrs.get("id", "") for block in trajectories
              for attrs, _ in prompts.parse_blocks(block, "trajectory") if attrs.get("outcome") == "failure"]
    if program is None or not failed or not failed[0]:
        return ""
    done = subprocess.run([program, "--", failed[0]] if failed[0].startswith("-") else [program, failed[0]],
                          capture_output=True, text=True, timeout=3600)
    out = (done.stdout or done.stderr).strip()
    transcript.call("Bash", {"command": f"skillgit-try {failed[0]}"}, out[:2000], error=done.returncode == 2)
    verdict = out.splitlines()[0] if out else f"exit {done.returncode}"
    return f"Tried it on {failed[0]}: {verdict}."


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m skillgit.world.agent_teacher",
                                     description="The simulated agent teacher (skillgit's offline world).")
    parser.add_argument("--prompt-file", default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output-format", choices=("text", "stream-json"), default="stream-json")
    parser.add_argument("--version", action="version", version=f"sim-teacher-agent {__version__}")
    args = parser.parse_args(argv)
    prompt = _read(Path(args.prompt_file)) if args.prompt_file else ""
    transcript = _Transcript()
    work = Path.cwd()
    if not (work / "evidence").is_dir() or not (work / "skill").is_dir():
        final = "There is no evidence/ and skill/ folder here: nothing to teach."
    else:
        final = teach(work, args.seed, transcript)
    transcript.say(final)
    if args.output_format == "text":
        print(final)
        return 0
    for event in transcript.events:
        print(json.dumps(event, ensure_ascii=False))
    print(json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": final,
                      "num_turns": transcript.n + 1, "total_cost_usd": 0,
                      "usage": {"input_tokens": tokens_of(prompt) + tokens_of("x" * transcript.read_chars),
                                "output_tokens": tokens_of(final) + 40 * transcript.n}}, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
