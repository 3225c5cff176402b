"""Small shared pieces of the simulated models: parameters with defaults, seeded randomness, usage numbers.

Determinism contract: every random choice of a simulated model comes from `seeded_rng(world seed, role,
request material)`, so the same request always gets the same answer (the call cache and resume rely on it),
while any change to the request (another skill, another `seed` field, another prompt) draws fresh noise.
"""

from __future__ import annotations

import hashlib
import math
import random
from typing import Any

from skillgit.types import Usage

# Defaults for parameters that a SimulatedCfg may not carry (older configs, plain namespaces in tests).
DEFAULTS: dict[str, Any] = {
    "seed": 0,
    "num_rules": 6,
    "noise": 0.05,
    "malformed_rate": 0.03,
    "latency_s": 0.0,
    "lucky_rate": 0.02,
    "min_fields": 1,
    "max_fields": 4,
    "dilution_lines": 40,
    "dilution_per_line": 0.005,
    "vague_rate": 0.2,
    "harmful_rate": 0.1,
    "off_target_rate": 0.15,
}


def param(cfg: Any, name: str) -> Any:
    return getattr(cfg, name, DEFAULTS[name]) if cfg is not None else DEFAULTS[name]


def digest(*parts: Any) -> str:
    return hashlib.blake2b("\x1f".join(map(str, parts)).encode("utf-8"), digest_size=6).hexdigest()


def seeded_rng(seed: int, role: str, material: str) -> random.Random:
    h = hashlib.blake2b(f"{seed}\x1f{role}\x1f{material}".encode("utf-8"), digest_size=8).digest()
    return random.Random(int.from_bytes(h, "big"))


def tokens_of(text: str) -> int:
    """A plausible token count: about four characters per token."""
    return max(1, math.ceil(len(text) / 4)) if text else 0


def usage(prompt_text: str, completion: str) -> Usage:
    return Usage(calls=1, prompt_tokens=tokens_of(prompt_text) + 4, completion_tokens=tokens_of(completion))
