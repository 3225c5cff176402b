"""Agentic rollout throughput: the thread executor vs Ray on a local multi-node cluster, and Ray's overhead per
task — every figure against the thread baseline measured in the same run.

    python bench/ray_throughput.py [--quick] [--nodes 2] [--cpus-per-node 1] [--items 16] [--rounds 2]

The workload is `skillgit demo --agentic`'s: the simulated coding agent (a real subprocess) in a throwaway git
workspace built from a fixture repository, verified by a real pytest run. Nothing is journaled (every rollout
really runs). Threads use `env.workers` = the cluster's CPU count, so both sides have the same parallelism.
Overhead per task: a Ray round trip of a task that does nothing, and (ray wall − threads wall) / rollouts.
Every Ray process binds 127.0.0.1 (`keep_ray_on_loopback`, `node_ip_address`), without a dashboard.
Writes bench/results/ray_throughput.json (with the machine).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import say, table, write_result  # noqa: E402

from skillgit.cli.demo import create_agentic_project  # noqa: E402
from skillgit.executor import THREADS, RayExecutor, StudentSpec, keep_ray_on_loopback  # noqa: E402
from skillgit.llm import factory  # noqa: E402
from skillgit.loop import stages  # noqa: E402
from skillgit.project import open_project  # noqa: E402
from skillgit.scorers import build_scorer  # noqa: E402
from skillgit.tasks import load_splits  # noqa: E402


def _noop(x: int) -> int:
    return x


def measure(student, skill, items, scorer, workers, rounds, executor=None) -> dict:
    walls = []
    unknown = 0
    for _ in range(rounds):
        start = time.perf_counter()
        trajs = stages.rollout(student, skill, items, scorer, workers=workers, executor=executor)
        walls.append(time.perf_counter() - start)
        unknown += sum(1 for t in trajs if not t.ok)
    best = min(walls)
    return {"wall_s": round(best, 3), "rollouts_per_s": round(len(items) / best, 3), "unknown": unknown,
            "walls_s": [round(w, 3) for w in walls]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="4 rollouts, 1 round")
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--cpus-per-node", type=int, default=1)
    ap.add_argument("--items", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--noops", type=int, default=200)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if args.quick:
        args.items, args.rounds, args.noops = 4, 1, 20

    keep_ray_on_loopback()  # before ray is imported: every node, agent and worker listens on 127.0.0.1 only
    import ray
    from ray.cluster_utils import Cluster

    with tempfile.TemporaryDirectory(prefix="skillgit-bench-ray-") as tmp:
        folder = Path(tmp) / "agentic"
        create_agentic_project(folder, 0)
        project = open_project(folder)
        cfg = project.config
        splits = load_splits(cfg.env, folder)
        items = list(splits.train)[:args.items]
        items = (items * (args.items // max(1, len(items)) + 1))[:args.items]
        scorer = build_scorer(cfg.env.scorer, folder)
        skill = (folder / cfg.skill.path / "SKILL.md" if (folder / cfg.skill.path).is_dir()
                 else folder / cfg.skill.path).read_text()
        width = args.nodes * args.cpus_per_node

        say(f"threads: {len(items)} agentic rollouts × {args.rounds} rounds at {width} workers")
        local = factory.build_student(cfg, folder)
        threads = measure(local, skill, items, scorer, width, args.rounds)

        say(f"ray: starting a local cluster of {args.nodes} nodes × {args.cpus_per_node} CPU")
        t0 = time.perf_counter()
        cluster = Cluster(initialize_head=True,
                          head_node_args={"num_cpus": args.cpus_per_node, "include_dashboard": False,
                                          "node_ip_address": "127.0.0.1"})
        for _ in range(args.nodes - 1):
            cluster.add_node(num_cpus=args.cpus_per_node, node_ip_address="127.0.0.1")
        cluster.wait_for_nodes()
        executor = RayExecutor(cluster.address)
        startup = time.perf_counter() - t0
        try:
            remote = executor.student(StudentSpec(cfg, str(folder)), lambda: factory.build_student(cfg, folder))
            stages.rollout(remote, skill, items[:width], scorer, workers=width, executor=executor)  # warm workers
            on_ray = measure(remote, skill, items, scorer, width, args.rounds, executor)
            noop = ray.remote(num_cpus=args.cpus_per_node)(_noop)
            ray.get([noop.remote(i) for i in range(width)])
            start = time.perf_counter()
            for i in range(args.noops):
                ray.get(noop.remote(i))
            noop_s = (time.perf_counter() - start) / args.noops
            start = time.perf_counter()
            THREADS.map(_noop, list(range(args.noops)), workers=1)
            thread_noop_s = (time.perf_counter() - start) / args.noops
        finally:
            executor.close()
            cluster.shutdown()

    result = {
        "items": len(items), "rounds": args.rounds, "nodes": args.nodes, "cpus_per_node": args.cpus_per_node,
        "threads": threads, "ray": on_ray, "cluster_startup_s": round(startup, 2),
        "ray_vs_threads_throughput": round(on_ray["rollouts_per_s"] / threads["rollouts_per_s"], 3),
        "ray_overhead_per_rollout_s": round((on_ray["wall_s"] - threads["wall_s"]) / len(items), 4),
        "ray_noop_roundtrip_ms": round(noop_s * 1000, 3), "thread_noop_call_ms": round(thread_noop_s * 1000, 4),
    }
    rows = [{"executor": "threads", **threads}, {"executor": "ray", **on_ray}]
    print(table(rows, [("executor", "executor", "s"), ("wall_s", "wall s", ".2f"),
                       ("rollouts_per_s", "rollouts/s", ".2f"), ("unknown", "unknown", "d")]))
    print(f"ray/threads throughput {result['ray_vs_threads_throughput']:.2f}×; "
          f"overhead {result['ray_overhead_per_rollout_s'] * 1000:+.0f} ms per rollout; "
          f"no-op round trip {result['ray_noop_roundtrip_ms']:.2f} ms; cluster startup {startup:.1f} s")
    write_result("ray_throughput", result, args.out)


if __name__ == "__main__":
    main()
