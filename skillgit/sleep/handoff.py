"""Handoff mode for sleep: the user's own agent plays the teacher through files.

The implementation is shared with `model.teacher_backend: handoff` for `skillgit train` and lives in
`skillgit/llm/handoff.py` (its module contract applies); this module re-exports it under the names sleep has
always used.
"""

from __future__ import annotations

from skillgit.llm.handoff import (
    INDEX,
    Deferring,
    HandoffDeferred,
    HandoffLLM,
    HandoffPending,
    answered,
    pending_prompts,
    render_prompt,
    request_from_file,
)

__all__ = ["INDEX", "Deferring", "HandoffDeferred", "HandoffLLM", "HandoffPending", "answered", "pending_prompts",
           "render_prompt", "request_from_file"]
