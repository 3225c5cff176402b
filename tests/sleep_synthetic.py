"""A synthetic agent history of any size, deterministic from a seed, for tests/test_sleep_mine_scale.py and
bench/sleep_scale.py.

What a heavy user's history holds: recurring task families (each asked in a few phrasings about the same files,
often with a word or two more, popularity falling off as Zipf's law), short follow-ups ("continue", "commit and
push"), and one-off requests in the project's vocabulary. `History.units(n)` gives the requests as `Session`s
(what mining reads); `History.write_claude(home, cwd, sessions, kb)` writes real-sized Claude Code 2.1 session files
(the records the CLI writes: thinking blocks with signatures, tool inputs and results twice — in the message and in
`toolUseResult` — usage, attachments, file-history snapshots), with a planted secret every ~200 KB
(tests/secret_corpus.py) and the repository's own source as the files the agent reads.
"""

from __future__ import annotations

import base64
import bisect
import itertools
import json
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from skillgit.sleep.model import Session, ToolCall, ToolResult, Turn
from tests.secret_corpus import FORMATS

ROOT = Path(__file__).resolve().parent.parent
_DEV = """parse date time zone offset config loader cache retry timeout token refresh session user account login
logout password reset email template render page layout header footer menu button form input validate error message
log level debug trace metric counter histogram export import csv json yaml schema migration database table column
index query join filter sort page limit offset api endpoint route handler middleware auth permission role admin
test fixture mock stub coverage lint format type hint docstring readme changelog release version tag branch merge
rebase commit push pull request review comment issue bug crash leak memory thread lock queue worker job schedule
cron backup restore upload download file path folder archive zip image resize thumbnail video audio stream socket
client server proxy header cookie cors csrf rate limiter payment invoice order cart product price discount tax
currency report chart graph dashboard widget search index ranking score vector embedding model prompt batch
pipeline stage step retry backoff circuit breaker health check probe deploy docker image compose kubernetes helm
chart terraform module variable output secret vault key rotate certificate tls ssl dns domain webhook event
notification slack mail sms push mobile android ios web frontend backend service client sdk cli flag option
argument parser command subcommand help usage install package dependency upgrade pin lock wheel build compile
bundle minify asset static css style theme dark mode accessibility translation locale language unicode encoding
bytes buffer flush close open read write append truncate rename delete copy move sync async await future promise
callback closure decorator generator iterator context manager exception raise catch finally cleanup""".split()
_CHATTER = ("continue", "yes, go ahead", "ok do it", "commit and push", "run the tests again", "what's next?",
            "keep going", "yes", "push it", "show me the diff", "go on", "try that", "do the same for the others")
_PHRASES = ("fix the failing {a} tests in {f}", "{a} is broken again in {f}, please fix it",
            "the {a} check fails after my change to {f}", "update the {a} docs for {b}", "add a {b} option to {a}",
            "why does {a} break when {b} is empty?", "refactor {a} out of {f}", "write tests for {a} {b}",
            "make {a} handle {b} like before", "clean up the {a} {b} code in {f}")
_SYLLABLES = "ka lo mi ne ru sa ti vo ze pa re di no fu ga he ji ko lu ma".split()
_TESTS_PASS = "....................                                                     [100%]\n{n} passed in 0.{ms}s"
_TESTS_FAIL = ("F...................\n"
               "=================================== FAILURES ===================================\n"
               "___ test_{a} ___\n\n    def test_{a}():\n>       assert {a}({b}) == expected\nE       AssertionError\n"
               "=========================== short test summary info ============================\n"
               "FAILED tests/test_{a}.py::test_{a} - AssertionError\n1 failed, {n} passed in 0.{ms}s")


def _zipf(size: int, s: float = 1.05) -> list[float]:
    return list(itertools.accumulate(1.0 / (i + 1) ** s for i in range(size)))


@dataclass(frozen=True)
class Request:
    text: str
    files: tuple[str, ...] = ()
    test: str | None = None
    failed: bool = False
    family: int = -1  # -1: a one-off or a follow-up


class History:
    """A project's vocabulary, files and task families, and requests drawn from them (see the module doc)."""

    def __init__(self, seed: int = 0, families: int | None = None) -> None:
        self.rng = random.Random(seed)
        rng = self.rng
        names = sorted({"".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 3))) for _ in range(1500)})
        self.words = _DEV + names
        rng.shuffle(self.words)
        self.cum = _zipf(len(self.words))
        self.files = [f"src/{rng.choice(names)}/{w}.py" for w in names[:400]]
        self.file_cum = _zipf(len(self.files), 1.2)
        self.n_families = families
        self.families: list[tuple[tuple[str, ...], tuple[tuple[str, str], ...], tuple[str, ...], str | None]] = []
        self.family_cum: list[float] = []

    def word(self) -> str:
        return self.words[bisect.bisect(self.cum, self.rng.random() * self.cum[-1])]

    def file(self) -> str:
        return self.files[bisect.bisect(self.file_cum, self.rng.random() * self.file_cum[-1])]

    def _family(self) -> None:
        rng = self.rng
        phrasings = tuple(rng.sample(_PHRASES, rng.randint(2, 3)))
        slots = tuple((self.word(), self.word()) for _ in range(rng.randint(1, 3)))
        files = tuple(self.file() for _ in range(rng.randint(1, 2)))
        test = f"pytest tests/test_{slots[0][0]}.py" if rng.random() < 0.6 else None
        self.families.append((phrasings, slots, files, test))

    def request(self, total: int) -> Request:
        rng = self.rng
        if not self.families:
            for _ in range(self.n_families or max(10, total // 250)):
                self._family()
            self.family_cum = _zipf(len(self.families), 1.0)
        roll = rng.random()
        if roll < 0.30:
            index = bisect.bisect(self.family_cum, rng.random() * self.family_cum[-1])
            phrasings, slots, files, test = self.families[index]
            a, b = rng.choice(slots)
            text = rng.choice(phrasings).format(a=a, b=b, f=files[0].rsplit("/", 1)[-1])
            if rng.random() < 0.35:  # a word or two more than usual
                text += " " + " ".join(self.word() for _ in range(rng.randint(1, 2)))
            return Request(text, files[: rng.randint(1, len(files))], test, rng.random() < 0.2, index)
        if roll < 0.45:
            return Request(rng.choice(_CHATTER))
        words = [self.word() for _ in range(rng.randint(6, 40))]
        files = tuple(self.file() for _ in range(rng.choice((0, 0, 1, 1, 2, 3))))
        test = f"pytest tests/test_{words[0]}.py -q" if files and rng.random() < 0.3 else None
        return Request(" ".join(words).capitalize() + ".", files, test, rng.random() < 0.15)

    # ------------------------------------------------------------------------------------------ sessions
    def units(self, n: int, *, per_session: int = 5) -> Iterator[Session]:
        """Sessions holding `n` requests in all (1 to 2·per_session each), as harvest returns them."""
        rng, made, number = self.rng, 0, 0
        while made < n:
            count = min(n - made, rng.randint(1, 2 * per_session))
            turns: list[Turn] = []
            minute = number * 97 % 1440
            for k in range(count):
                req = self.request(n)
                ts = f"2025-{1 + number // 3000 % 12:02d}-{1 + number // 100 % 28:02d}T{minute // 60:02d}:" \
                     f"{minute % 60:02d}:{k % 60:02d}Z"
                turns.append(Turn("user", req.text, timestamp=ts))
                calls, results = [], []
                for i, path in enumerate(req.files):
                    calls.append(ToolCall("Edit", path, None, (path,), True, f"e{i}"))
                    results.append(ToolResult("updated", call_id=f"e{i}"))
                if req.test:
                    out = _TESTS_FAIL if req.failed else _TESTS_PASS
                    calls.append(ToolCall("Bash", req.test, req.test, (), False, "t"))
                    results.append(ToolResult(out.format(n=rng.randint(3, 90), ms=rng.randint(10, 99), a="x", b=1),
                                              is_error=req.failed, call_id="t"))
                answer = " ".join(self.word() for _ in range(rng.randint(8, 60)))
                turns.append(Turn("assistant", answer, tuple(calls), tuple(results), ts))
                if rng.random() < 0.08:
                    turns.append(Turn("user", "no, that's wrong, " + self.word(), timestamp=ts))
                    turns.append(Turn("assistant", "Sorry, fixed.", timestamp=ts))
                elif rng.random() < 0.2:
                    turns.append(Turn("user", "thanks", timestamp=ts))
            yield Session("claude", f"s{number:06d}", cwd="/home/dev/project", started=turns[0].timestamp,
                          ended=turns[-1].timestamp, turns=tuple(turns), git_branch="main")
            made += count
            number += 1

    # ------------------------------------------------------------------------------------------ files
    def write_claude(self, home: Path, cwd: str, sessions: int, kb: int = 540) -> list[Path]:
        """`sessions` Claude Code session files of `kb` KB on average under `home`; returns their paths."""
        folder = home / ".claude" / "projects" / cwd.replace("/", "-")
        folder.mkdir(parents=True, exist_ok=True)
        sources = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "skillgit").rglob("*.py"))
                   if p.name != "secret_rules.py"]
        writer = _ClaudeWriter(self, cwd, sources)
        paths = []
        for number in range(sessions):
            target = folder / f"{uuid.UUID(int=self.rng.getrandbits(128))}.jsonl"
            size = int(kb * 1000 * min(4.0, self.rng.lognormvariate(0, 0.6)) / 1.2)
            target.write_text(writer.session(target.stem, size, number), encoding="utf-8")
            paths.append(target)
        return paths


class _ClaudeWriter:
    """The records Claude Code 2.1 writes (see tests/fixtures/transcripts/claude/), filled to a target size."""

    def __init__(self, history: History, cwd: str, sources: list[str]) -> None:
        self.h, self.cwd, self.sources = history, cwd, sources
        self.written = 0
        self.next_secret = 200_000

    def _base(self, session: str, kind: str, ts: str, parent: str | None) -> dict:
        return {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": self.cwd,
                "sessionId": session, "version": "2.1.330", "gitBranch": "main", "type": kind,
                "uuid": str(uuid.UUID(int=self.h.rng.getrandbits(128))), "timestamp": ts, "entrypoint": "cli"}

    def _source(self, lines: int) -> str:
        text = self.h.rng.choice(self.sources)
        start = self.h.rng.randrange(max(1, len(text) - 200))
        return "\n".join(text[start:].splitlines()[:lines])

    def _secret(self) -> str:
        if self.written < self.next_secret:
            return ""
        self.next_secret += 200_000
        return "\n" + FORMATS[self.next_secret // 200_000 % len(FORMATS)].text + "\n"

    def session(self, session: str, size: int, number: int) -> str:
        rng = self.h.rng
        out: list[str] = []
        total, parent, step = 0, None, 0
        day = f"2025-{1 + number % 12:02d}-{1 + number % 28:02d}"

        def emit(record: dict) -> None:
            nonlocal total, parent
            line = json.dumps(record, ensure_ascii=False)
            out.append(line)
            total += len(line) + 1
            self.written += len(line) + 1
            parent = record.get("uuid", parent)

        while total < size or step == 0:
            ts = f"{day}T{9 + step // 3600 % 12:02d}:{step // 60 % 60:02d}:{step % 60:02d}.000Z"
            req = self.h.request(100_000)
            emit({"type": "file-history-snapshot", "messageId": str(uuid.UUID(int=rng.getrandbits(128))),
                  "snapshot": {"trackedFileBackups": {f: {"version": 1} for f in req.files}},
                  "isSnapshotUpdate": False})
            emit({**self._base(session, "user", ts, parent), "message": {"role": "user", "content": req.text},
                  "promptSource": "typed"})
            for call in range(rng.randint(3, 12)):
                step += 1
                said = " ".join(self.h.word() for _ in range(rng.randint(5, 40)))
                thinking = " ".join(self.h.word() for _ in range(rng.randint(20, 120)))
                signature = base64.b64encode(rng.randbytes(rng.randint(300, 900))).decode()
                name, tool_input, output, extra = self._tool(req, call)
                call_id = f"toolu_{rng.getrandbits(64):016x}"
                emit({**self._base(session, "assistant", ts, parent), "requestId": f"req_{rng.getrandbits(64):x}",
                      "message": {"id": f"msg_{rng.getrandbits(64):x}", "type": "message", "role": "assistant",
                                  "model": "claude-opus-5-5", "content": [
                                      {"type": "thinking", "thinking": thinking, "signature": signature},
                                      {"type": "text", "text": said},
                                      {"type": "tool_use", "id": call_id, "name": name, "input": tool_input}],
                                  "stop_reason": "tool_use", "usage": {"input_tokens": rng.randint(1000, 90000),
                                                                       "output_tokens": rng.randint(20, 900),
                                                                       "cache_read_input_tokens": 0}}})
                emit({**self._base(session, "user", ts, parent), "message": {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": call_id, "content": output,
                     "is_error": req.failed and name == "Bash" and call == 0}]}, "toolUseResult": extra})
            emit({**self._base(session, "assistant", ts, parent), "message": {
                "role": "assistant", "model": "claude-opus-5-5",
                "content": [{"type": "text", "text": " ".join(self.h.word() for _ in range(rng.randint(10, 80)))}]}})
            if rng.random() < 0.2:
                emit({**self._base(session, "user", ts, parent), "message": {"role": "user", "content": "thanks"}})
        return "\n".join(out) + "\n"

    def _tool(self, req: Request, call: int) -> tuple[str, dict, str, dict]:
        rng = self.h.rng
        if req.test and call == 0:
            out = (_TESTS_FAIL if req.failed else _TESTS_PASS).format(n=rng.randint(3, 90), ms=rng.randint(10, 99),
                                                                       a=self.h.word(), b=1)
            return "Bash", {"command": req.test, "description": "Run the tests"}, out, \
                {"stdout": out, "stderr": "", "interrupted": False, "isImage": False}
        kind = rng.random()
        if kind < 0.45 or not req.files:
            path = f"{self.cwd}/{self.h.file()}"
            content = self._source(rng.randint(40, 400)) + self._secret()
            return "Read", {"file_path": path}, content, \
                {"type": "text", "file": {"filePath": path, "content": content, "numLines": content.count("\n") + 1}}
        if kind < 0.75:
            path = f"{self.cwd}/{rng.choice(req.files)}"
            old, new = self._source(rng.randint(3, 30)), self._source(rng.randint(3, 40))
            return "Edit", {"file_path": path, "old_string": old, "new_string": new}, \
                f"The file {path} has been updated.", {"filePath": path, "oldString": old, "newString": new,
                                                      "originalFile": self._source(rng.randint(100, 500))}
        command = rng.choice(("git status", "git log --oneline -20", "ls -la src", "git diff --stat",
                              f"grep -rn {self.h.word()} src"))
        out = "\n".join(f"{rng.getrandbits(28):07x} {' '.join(self.h.word() for _ in range(6))}"
                        for _ in range(rng.randint(5, 60))) + self._secret()
        return "Bash", {"command": command, "description": "look"}, out, \
            {"stdout": out, "stderr": "", "interrupted": False, "isImage": False}
