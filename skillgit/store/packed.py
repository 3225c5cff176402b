"""skillgit's own cache files under `.git/skillgit/cache/` (`*.json.z`): one JSON document, compact and
zlib-compressed, replaced atomically.

Contract:
- `write_packed` writes to a temporary file beside the target and renames it over the target: a reader sees the
  old document or the new one, never a torn one. A repository skillgit cannot write to (a read-only clone) just
  has no cache: it returns False and leaves nothing behind.
- `read_packed` returns the document, or None for a missing, damaged or foreign file (a miss: the caller computes
  again). What the document must hold is the caller's to check.
"""

from __future__ import annotations

import json
import os
import zlib
from pathlib import Path
from typing import Any


def read_packed(path: Path) -> Any:
    try:
        return json.loads(zlib.decompress(path.read_bytes()))
    except (OSError, ValueError, zlib.error):  # (ValueError: not JSON, or not UTF-8)
        return None


def write_packed(path: Path, doc: Any) -> bool:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
        tmp.write_bytes(zlib.compress(text.encode("utf-8"), 6))
        os.replace(tmp, path)
        return True
    except OSError:
        tmp.unlink(missing_ok=True)
        return False
