"""MCP start-up: how long `skillgit mcp` takes to answer `initialize`, against `python -c "import mcp"` in the
same run (the SDK's own floor: no server on it can answer sooner).

    python bench/mcp_start.py [--quick] [--rounds 7] [--max-rounds 40] [--tight 0.10]

Each round starts, in alternating order, a fresh `python -c "import mcp"` and a fresh `python -m skillgit mcp`
(in a scratch git repository) that is sent one `initialize` request on stdin; the time is from the start of the
process to the complete answer line on stdout (the server is then closed; for `import mcp`, to a line printed
right after the import). Both run with their .pyc files (one
untimed run of each first). Validity: rounds are paired, so load that comes and goes hits both sides of a pair;
the bench repeats rounds (up to --max-rounds) until the 95 % interval of the median of the paired ratios
(server / import mcp) is within ±`tight` of it, for wall time and for CPU time (user + system of the process up
to its line: what load inflates least), and says so when it could not. It also lists the top-level
modules loaded when the answer is written, beyond those `import mcp` loads itself — the figure that does not
depend on load: the goal is that nothing heavy (rich, typer, openai, anthropic, GitPython, yaml, skillgit's
store) is among them.
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

from tests.helpers import initialize_request, mcp_answer_and_modules, sdk_modules  # noqa: E402

HEAVY = ("rich", "typer", "click", "openai", "anthropic", "git", "yaml", "skillgit.store", "skillgit.llm",
         "skillgit.loop")


def env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def first_line(args: list[str], cwd: Path, stdin: bytes | None = None) -> tuple[float, float, str]:
    """Start `args`, send `stdin`, and when the first stdout line is complete kill the process: (wall seconds to
    that line, CPU seconds the process used — user + system, far less sensitive to load — and the line)."""
    start = time.monotonic()
    proc = subprocess.Popen(args, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env())
    assert proc.stdin is not None and proc.stdout is not None
    try:
        if stdin:
            proc.stdin.write(stdin)
            proc.stdin.flush()
        line = proc.stdout.readline()
        wall = time.monotonic() - start
    finally:
        proc.kill()
        _, _, usage = os.wait4(proc.pid, 0)
        proc.returncode = -9
        proc.stdin.close()
        proc.stdout.close()
    return wall, usage.ru_utime + usage.ru_stime, line.decode(errors="replace")


def initialize(folder: Path) -> tuple[float, float, str]:
    """`skillgit mcp` sent one `initialize`: (wall, CPU, the answer line)."""
    return first_line([sys.executable, "-m", "skillgit", "mcp"], folder,
                      (json.dumps(initialize_request("bench")) + "\n").encode())


def import_mcp(folder: Path) -> tuple[float, float]:
    """`python -c "import mcp; print('ok')"` to its line (not to its exit: the server's time also stops at its
    answer, and tearing an interpreter down costs time of its own): (wall, CPU)."""
    wall, cpu, line = first_line([sys.executable, "-c", "import mcp; print('ok', flush=True)"], folder)
    if line.strip() != "ok":
        raise RuntimeError("`python -c 'import mcp'` failed: is the mcp extra installed?")
    return wall, cpu


def modules_at_answer(folder: Path) -> tuple[list[str], list[str]]:
    """(modules loaded when the answer was written, modules `import mcp` loads by itself), by the probe
    tests/test_mcp_start.py uses (tests/helpers.py)."""
    _, modules, _ = mcp_answer_and_modules(folder, folder / ".git" / "modules.json", client="bench", env=env())
    return modules, sdk_modules(env())


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
        initialize(folder)  # untimed: writes the .pyc files
        import_mcp(folder)
        _, _, answer = initialize(folder)
        reply = json.loads(answer)
        modules, sdk = modules_at_answer(folder)
        rows: list[tuple[float, float, float, float]] = []  # (server wall, server CPU, import wall, import CPU)
        tight = False
        while len(rows) < a.max_rounds:
            if rng.random() < 0.5:
                sw, sc, _ = initialize(folder)
                bw, bc = import_mcp(folder)
            else:
                bw, bc = import_mcp(folder)
                sw, sc, _ = initialize(folder)
            rows.append((sw, sc, bw, bc))
            if len(rows) >= a.rounds:
                tight = all(_tight([r[i] / r[i + 2] for r in rows], a.tight) for i in (0, 1))
                if tight:
                    break
        say(f"mcp_start: {len(rows)} rounds")

    def figures(i: int) -> dict:
        server, base = [r[i] for r in rows], [r[i + 2] for r in rows]
        ratios = [s / b for s, b in zip(server, base)]
        lo, hi = median_interval(ratios)
        return {"server_s": round(statistics.median(server), 3), "server_best_s": round(min(server), 3),
                "import_mcp_s": round(statistics.median(base), 3), "ratio": round(statistics.median(ratios), 3),
                "ratio_ci95": [round(lo, 3), round(hi, 3)], "tight": _tight(ratios, a.tight)}

    data = {"rounds": len(rows), "wall": figures(0), "cpu": figures(1), "interval_tight": tight,
            "tight_target": a.tight, "server_name": reply.get("result", {}).get("serverInfo", {}).get("name"),
            "modules_at_answer": len(modules), "sdk_modules": len(sdk),
            "added_to_sdk": len(set(modules) - set(sdk)), "heavy_at_answer": heavy(sorted(set(modules) - set(sdk))),
            "load": os.getloadavg(), "goal": {"wall_server_s": 0.5, "when": "idle 2-core machine"}}
    write_result("mcp_start", data, a.out)
    for kind in ("wall", "cpu"):
        f = data[kind]
        lo, hi = f["ratio_ci95"]
        print(f"{kind:>4}: initialize answered in {f['server_s']:.3f} s (median of {len(rows)}; best "
              f"{f['server_best_s']:.3f}); `import mcp` {f['import_mcp_s']:.3f} s; ratio {f['ratio']:.2f} (95 % "
              f"interval {lo:.2f}–{hi:.2f}{'' if f['tight'] else f', NOT within ±{a.tight:.0%}: too noisy'})")
    print(f"{len(modules)} modules loaded when the answer was written ({data['added_to_sdk']} beyond `import mcp`'s "
          f"{len(sdk)}); heavy among those: "
          f"{', '.join(data['heavy_at_answer']) or 'none'}; load average {data['load'][0]:.1f} "
          f"({machine().get('cpu', '?')})")
    return data


if __name__ == "__main__":
    main()
