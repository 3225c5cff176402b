"""The digest harvest keeps per session (`SessionMark.digest`): it changes exactly when the session's turns do.

Contracts:
- `digest(session)` is `DIGEST_PREFIX` + 20 hex characters of a sha256 over every field `Turn.to_dict` serialises
  (role, text, timestamp, each call's name, summary, command, paths, writes and id, each result's output, error
  flag, id and exit code, each skill's name, kind, how and path), never a reader's `ToolResult.cut`. The strings
  are hashed as one UTF-8 run (lone surrogates, which a JSON file can spell as `\\ud800`, pass through) after a
  header of their lengths and of the non-string fields, so two different sessions never hash the same input.
  It costs about a third of serialising the turns to JSON (harvest digests every session it reads).
- `digest_v1(session)` is the digest states written before `DIGEST_PREFIX` hold (20 hex characters of a sha256 of
  the turns' JSON); `same(recorded, session, fresh)` compares a recorded digest of either kind with the session, so
  a state from an older skillgit finds its unchanged sessions unchanged (and the next state records the new kind).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from skillgit.sleep.model import Session

DIGEST_PREFIX = "t2:"


def digest(session: Session) -> str:
    texts: list[str] = []
    shape: list[Any] = []
    mark = shape.append
    for turn in session.turns:
        calls, results, skills = turn.tool_calls, turn.tool_results, turn.skills
        texts += (turn.role, turn.text, turn.timestamp or "")
        shape += (len(calls), len(results), len(skills), turn.timestamp is None)
        for call in calls:
            texts += (call.name, call.summary, call.command or "", call.call_id, *call.paths)
            shape += (len(call.paths), call.command is None, call.writes)
        for result in results:
            texts += (result.output, result.call_id)
            shape += (result.is_error, result.exit_code)
        for use in skills:
            texts += (use.name, use.kind, use.how, use.path or "")
            mark(use.path is None)
    try:
        header = repr(([len(t) for t in texts], shape)).encode("ascii")
        # each string encoded on its own, then the bytes joined: the same bytes as encoding the strings joined
        # (UTF-8 encodes code point by code point; surrogatepass too), without widening every ASCII string to
        # two bytes per character when one holds a character beyond Latin-1 (every cut output's "…")
        body = b"".join([t.encode("utf-8", "surrogatepass") for t in texts])
    except (TypeError, AttributeError, UnicodeError):  # a reader put something else than a string: as JSON
        return DIGEST_PREFIX + digest_v1(session)
    hashed = hashlib.sha256(header)
    hashed.update(b"\x00")
    hashed.update(body)
    return DIGEST_PREFIX + hashed.hexdigest()[:20]


def digest_v1(session: Session) -> str:
    payload = json.dumps([t.to_dict() for t in session.turns], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()[:20]


def same(recorded: str, session: Session, fresh: str) -> bool:
    """True when `recorded` (a digest of either kind) is `session`'s, whose digest is `fresh`."""
    if recorded.startswith(DIGEST_PREFIX):
        return recorded == fresh
    return recorded == digest_v1(session)
