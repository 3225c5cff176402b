"""MCP start-up: how long `skillgit mcp` takes to answer `initialize`, against `python -c "import mcp"` in the
same run (the SDK's own floor: a server that imports the SDK before answering cannot answer sooner).

    python bench/mcp_start.py [--quick] [--rounds 9] [--max-rounds 40] [--tight 0.10]

Each round starts, in random order, fresh processes (in a scratch git repository): `python -c "import mcp"`;
`python -m skillgit mcp` sent one `initialize` (the light front answers it from the SDK's recorded answers: the
bench's first, untimed start records them); the same sent `initialize`, `notifications/initialized` and a
`tools/call` of `status` at once, as an agent does (the first tool call, answered by the SDK's server after the
hand-over); and both again on the SDK's own stdio transport without the front (`mcp_server.serve`, what
`skillgit mcp` was before). Each is timed from the start of the process to the complete answer line on stdout
(for `import mcp`, a line printed right after the import), then killed; wall time and CPU time (user + system of
the process up to its line: what load inflates least). All run with their .pyc files (untimed runs first).
Validity: rounds are paired, so load that comes and goes hits all sides of a round; the bench repeats rounds (up
to --max-rounds) until the 95 % interval of the median of the paired ratios (initialize / import mcp) is within
±`tight` of it, for wall time and for CPU time, and says so when it could not. It also lists the top-level
modules loaded when the answer is written, beyond those `import mcp` loads itself — the figure that does not
depend on load: the goal is that nothing heavy (rich, typer, openai, anthropic, GitPython, yaml, skillgit's
store) is among them; with the front, not even the SDK.
Writes bench/results/mcp_start.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # the checkout: tests/helpers.py

from benchlib import machine, say, write_result  # noqa: E402

from skillgit.integrations.mcp_front import HANDSHAKE_ENV  # noqa: E402
from tests.helpers import initialize_request, mcp_answer_and_modules, sdk_modules  # noqa: E402

HEAVY = ("rich", "typer", "click", "openai", "anthropic", "git", "yaml", "skillgit.store", "skillgit.llm",
         "skillgit.loop")


def env(handshake: Path) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out[HANDSHAKE_ENV] = str(handshake)  # the bench's own record (its first start writes it)
    return out


def until(args: list[str], cwd: Path, environ: dict[str, str], stdin: bytes | None = None,
          want: object = None) -> tuple[float, float, str]:
    """Start `args`, send `stdin`, and when the stdout line answering request id `want` (None: the first line) is
    complete, kill the process: (wall seconds to that line, CPU seconds the process used — user + system, far less
    sensitive to load — and the line)."""
    start = time.monotonic()
    proc = subprocess.Popen(args, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=environ)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        if stdin:
            proc.stdin.write(stdin)
            proc.stdin.flush()
        while True:
            line = proc.stdout.readline()
            if not line or want is None or json.loads(line).get("id") == want:
                break
        wall = time.monotonic() - start
    finally:
        proc.kill()
        _, _, usage = os.wait4(proc.pid, 0)
        proc.returncode = -9
        proc.stdin.close()
        proc.stdout.close()
    if not line:
        raise RuntimeError(f"{args[-2:]} ended without the answer")
    return wall, usage.ru_utime + usage.ru_stime, line.decode(errors="replace")


INIT = (json.dumps(initialize_request("bench")) + "\n").encode()
FIRST_CALL = INIT + b"".join((json.dumps(m) + "\n").encode() for m in (
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "status", "arguments": {}}}))
SDK_ONLY = "from skillgit.integrations.mcp_server import serve\nserve()\n"


def initialize(folder: Path, environ: dict[str, str]) -> tuple[float, float, str]:
    """`skillgit mcp` sent one `initialize`: (wall, CPU, the answer line)."""
    return until([sys.executable, "-m", "skillgit", "mcp"], folder, environ, INIT)


def first_call(folder: Path, environ: dict[str, str]) -> tuple[float, float]:
    """`skillgit mcp` sent `initialize`, `initialized` and `tools/call status` at once: to the call's answer."""
    wall, cpu, line = until([sys.executable, "-m", "skillgit", "mcp"], folder, environ, FIRST_CALL, want=2)
    if "result" not in json.loads(line):
        raise RuntimeError(f"the first tool call failed: {line[:300]}")
    return wall, cpu


def sdk_only(folder: Path, environ: dict[str, str]) -> tuple[float, float]:
    """The SDK's own stdio transport serving skillgit's server (no front) sent one `initialize`."""
    wall, cpu, _ = until([sys.executable, "-c", SDK_ONLY], folder, environ, INIT)
    return wall, cpu


def sdk_only_call(folder: Path, environ: dict[str, str]) -> tuple[float, float]:
    """As `first_call`, on the SDK's own stdio transport (no front): what the hand-over costs the first call."""
    wall, cpu, _ = until([sys.executable, "-c", SDK_ONLY], folder, environ, FIRST_CALL, want=2)
    return wall, cpu


def import_mcp(folder: Path, environ: dict[str, str]) -> tuple[float, float]:
    """`python -c "import mcp; print('ok')"` to its line (not to its exit: the server's time also stops at its
    answer, and tearing an interpreter down costs time of its own): (wall, CPU)."""
    wall, cpu, line = until([sys.executable, "-c", "import mcp; print('ok', flush=True)"], folder, environ)
    if line.strip() != "ok":
        raise RuntimeError("`python -c 'import mcp'` failed: is the mcp extra installed?")
    return wall, cpu


def modules_at_answer(folder: Path, environ: dict[str, str]) -> tuple[list[str], list[str]]:
    """(modules loaded when the answer was written, modules `import mcp` loads by itself), by the probe
    tests/test_mcp_start.py uses (tests/helpers.py)."""
    _, modules, _ = mcp_answer_and_modules(folder, folder / ".git" / "modules.json", client="bench", env=environ)
    return modules, sdk_modules(environ)


def heavy(modules: list[str]) -> list[str]:
    return sorted({m for m in modules for h in HEAVY if m == h or m.startswith(h + ".")})


def median_interval(values: list[float], confidence: float = 0.95) -> tuple[float, float]:
    """Distribution-free interval of the median: order statistics (k, n+1-k), 1-based, with the largest k whose
    coverage P(k <= Binomial(n, 1/2) <= n-k) reaches `confidence`; the whole range when no k does (small n)."""
    from math import comb

    n = len(values)
    s = sorted(values)
    for k in range(n // 2, 0, -1):
        if sum(comb(n, i) for i in range(k, n - k + 1)) / 2 ** n >= confidence:
            return s[k - 1], s[n - k]
    return s[0], s[-1]


def _tight(ratios: list[float], rel: float) -> bool:
    med = statistics.median(ratios)
    lo, hi = median_interval(ratios)
    return hi - med <= rel * med and med - lo <= rel * med


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="a tiny setting for tests (seconds)")
    p.add_argument("--rounds", type=int, default=9, help="rounds before checking the interval")
    p.add_argument("--max-rounds", type=int, default=40)
    p.add_argument("--tight", type=float, default=0.10, help="relative half-width of the ratio's interval")
    p.add_argument("--out", type=Path, default=None)
    a = p.parse_args(argv)
    if a.quick:
        a.rounds, a.max_rounds = 2, 2
    rng = random.Random(0)
    with tempfile.TemporaryDirectory(prefix="skillgit-bench-mcp-") as tmp:
        folder = Path(tmp)
        subprocess.run(["git", "init", "-q", str(folder)], check=True)
        environ = env(folder / ".git" / "mcp-handshake.json")
        initialize(folder, environ)  # untimed: writes the .pyc files and records the SDK's answers
        import_mcp(folder, environ)
        first_call(folder, environ)
        _, _, answer = initialize(folder, environ)
        reply = json.loads(answer)
        modules, sdk = modules_at_answer(folder, environ)
        sides = {"server": lambda: initialize(folder, environ)[:2], "import": lambda: import_mcp(folder, environ),
                 "call": lambda: first_call(folder, environ), "sdk": lambda: sdk_only(folder, environ),
                 "sdk_call": lambda: sdk_only_call(folder, environ)}
        rows: list[dict[str, tuple[float, float]]] = []  # per round: side -> (wall, CPU)
        tight = False
        while len(rows) < a.max_rounds:
            order = list(sides)
            rng.shuffle(order)
            rows.append({side: sides[side]() for side in order})
            if len(rows) >= a.rounds:
                tight = all(_tight([r["server"][i] / r["import"][i] for r in rows], a.tight) for i in (0, 1))
                if tight:
                    break
        say(f"mcp_start: {len(rows)} rounds")

    def figures(i: int) -> dict:
        base = [r["import"][i] for r in rows]
        out: dict = {"import_mcp_s": round(statistics.median(base), 3)}
        for side, name in (("server", "server"), ("call", "first_call"), ("sdk", "sdk_only"),
                           ("sdk_call", "sdk_only_first_call")):
            values = [r[side][i] for r in rows]
            ratios = [v / b for v, b in zip(values, base)]
            lo, hi = median_interval(ratios)
            prefix = "" if side == "server" else name + "_"
            out.update({f"{name}_s": round(statistics.median(values), 3),
                        f"{name}_best_s": round(min(values), 3), f"{prefix}ratio": round(statistics.median(ratios), 3),
                        f"{prefix}ratio_ci95": [round(lo, 3), round(hi, 3)]})
        out["tight"] = _tight([r["server"][i] / r["import"][i] for r in rows], a.tight)
        return out

    data = {"rounds": len(rows), "wall": figures(0), "cpu": figures(1), "interval_tight": tight,
            "tight_target": a.tight, "server_name": reply.get("result", {}).get("serverInfo", {}).get("name"),
            "modules_at_answer": len(modules), "sdk_modules": len(sdk),
            "added_to_sdk": len(set(modules) - set(sdk)), "heavy_at_answer": heavy(sorted(set(modules) - set(sdk))),
            "sdk_at_answer": any(m == "mcp" for m in modules),
            "load": os.getloadavg(), "goal": {"wall_server_s": 0.5, "when": "idle 2-core machine"}}
    write_result("mcp_start", data, a.out)
    for kind in ("wall", "cpu"):
        f = data[kind]
        lo, hi = f["ratio_ci95"]
        print(f"{kind:>4}: initialize answered in {f['server_s']:.3f} s (median of {len(rows)}; best "
              f"{f['server_best_s']:.3f}); `import mcp` {f['import_mcp_s']:.3f} s; ratio {f['ratio']:.2f} (95 % "
              f"interval {lo:.2f}–{hi:.2f}{'' if f['tight'] else f', NOT within ±{a.tight:.0%}: too noisy'})")
        for name, what in (("first_call", "first tool call answered"), ("sdk_only", "without the front"),
                           ("sdk_only_first_call", "first tool call without the front")):
            lo, hi = f[f"{name}_ratio_ci95"]
            print(f"      {what}: {f[f'{name}_s']:.3f} s; × import mcp {f[f'{name}_ratio']:.2f} ({lo:.2f}–{hi:.2f})")
    print(f"{len(modules)} modules loaded when the answer was written ({data['added_to_sdk']} beyond `import mcp`'s "
          f"{len(sdk)}; the SDK {'imported' if data['sdk_at_answer'] else 'not imported'}); heavy among those: "
          f"{', '.join(data['heavy_at_answer']) or 'none'}; load average {data['load'][0]:.1f} "
          f"({machine().get('cpu', '?')})")
    return data


if __name__ == "__main__":
    main()
