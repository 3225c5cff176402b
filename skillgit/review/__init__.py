"""Reviewing what training learned: pull-request bodies with evidence, the HTML report's data, a human summary of
one step, and `skillgit check`, the gate for human edits in CI.

- `data`: one run's decisions read back from git (notes, commits, the run ref) → `RunReview`, `RunReport`.
- `branch`: `skillgit train --branch NAME` — the review branch and the base it was started from.
- `pr`: the pull-request body (Markdown), pushing the head branch, `gh pr create`.
- `check`: score a human edit (HEAD against a base) with the training gate's rules → exit 0 / 1 / 2.
- `show`: the summary `skillgit show REV` opens with.
- `workflow`: `skillgit check --print-workflow` — the shipped GitHub Actions workflow filled in from the config.

Everything here reads git through `skillgit.store` and scores through `skillgit.loop.gate`; nothing spells a git
command.
"""

from __future__ import annotations
