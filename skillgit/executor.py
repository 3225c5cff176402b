"""Where the parallel work of a step runs: one seam, threads by default, Ray past one machine.

Contract:
- `Executor.map(fn, items, *, workers) -> list` runs `fn` on every item in the driver, at most `workers` at a time
  (Ray: at least as many as the cluster has CPUs, since each call only waits on a remote task), results in item
  order. `ThreadExecutor` is exactly the loop's former thread pool (same results, same order).
- `Executor.student(spec, build_local) -> Student`: the student whose `run` executes where this executor runs
  work. Threads: `build_local()` (today's student). Ray: a `RemoteStudent` that ships **only the work** — the
  `StudentSpec` (the config, to build the student in the worker with `factory.build_student`; put once in the
  object store), the skill text, the item, the sample index and, for an agentic item with a `fixture` workspace,
  a tar of that folder (the workspace is created on the worker: no shared file system needed).
- The journal (`CachedStudent`), the ledger (`MeteredStudent`), budgets and git stay in the driver: the session
  wraps the remote student as `Metered(Cached(RemoteStudent))`, so a journaled call is answered before anything
  is shipped and every result is recorded by the driver. Retries of real calls happen in the worker
  (`RetryingStudent` is part of the built student).
- Secrets reach workers only through Ray's `runtime_env={"env_vars": …}` set at `ray.init`; every shipped
  argument is pickled and checked against `redact.secret_values()` first (`check_shippable`), so a secret never
  becomes a task argument (Ray's logs and dashboard show those).
- Where Ray runs (`ray_target`, `RayExecutor`): without `env.ray_address` (or with `local`) a run starts its OWN
  Ray instance — `ray.init(address="local")`, never the cluster a leftover `/tmp/ray/ray_current_cluster` or
  `RAY_ADDRESS` names — bound to 127.0.0.1 (every Ray process: GCS, raylet, agents, workers), with no dashboard
  and a per-run auth token kept in the environment (nothing written to HOME); a node on any other address stops
  the run. An `env.ray_address` (`host:port`, `ray://host:port`, or `auto` = the running cluster this machine
  records) is probed first: a dead address fails within seconds with a `SkillgitError` naming the key, instead
  of Ray waiting for a GCS that is gone.
- A worker lost mid-run (worker or node death, `RayTaskError`, lost object, timeout) makes that attempt *unknown*
  and it is shipped again, at most `attempts` times; after that the run raises `LLMError(kind="connection")`,
  which `stages.rollout` turns into an unknown trajectory — never a failure. An `LLMError` raised by the student
  in the worker comes back as data and is raised unchanged in the driver.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import ipaddress
import os
import pickle
import secrets
import shutil
import socket
import sys
import tarfile
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Sequence, TypeVar

from skillgit.config import Config
from skillgit.errors import SkillgitError
from skillgit.llm.base import LLMError, Reply, Student
from skillgit.llm.cache import model_identity
from skillgit.provenance import extra_hint
from skillgit.redact import secret_values
from skillgit.types import Item

T = TypeVar("T")
R = TypeVar("R")

TASK_DIR_KEY = "task_dir"  # = skillgit.agentic.spec.TASK_DIR_KEY (not imported: the executor loads no agent code)
RAY_HINT = f"install the ray extra's packages: {extra_hint('ray')} (or set env.executor: threads)"


@dataclass(frozen=True)
class StudentSpec:
    """What a worker needs to build the student: the project's config and the driver's project root (used on the
    worker only when that path exists there; otherwise an empty repository stands in). Never any secret."""

    config: Config
    root: str

    @property
    def key(self) -> str:
        return hashlib.sha1(pickle.dumps((self.config.to_dict(), self.root))).hexdigest()


class Executor(Protocol):
    name: str

    def map(self, fn: Callable[[T], R], items: Sequence[T], *, workers: int) -> list[R]: ...

    def student(self, spec: StudentSpec, build_local: Callable[[], Student]) -> Student: ...

    def close(self) -> None: ...


class ThreadExecutor:
    """Today's behaviour: a bounded thread pool in this process; the student runs here."""

    name = "threads"

    def map(self, fn: Callable[[T], R], items: Sequence[T], *, workers: int) -> list[R]:
        if workers <= 1 or len(items) <= 1:
            return [fn(x) for x in items]
        with ThreadPoolExecutor(max_workers=min(workers, len(items))) as pool:
            return list(pool.map(fn, items))

    def student(self, spec: StudentSpec, build_local: Callable[[], Student]) -> Student:
        return build_local()

    def close(self) -> None:
        return None


THREADS = ThreadExecutor()


# ---------------------------------------------------------------------------------------------- shipping
def check_shippable(*args: Any) -> None:
    """Refuse to ship arguments whose pickled bytes contain a secret value (registered or in the environment)."""
    blob = pickle.dumps(args)
    for value in secret_values():
        if value.encode("utf-8") in blob:
            raise SkillgitError("a secret value would be shipped to a Ray worker as a task argument",
                                "secrets reach workers only through runtime_env env_vars; keep them out of "
                                "tasks, skills and config values")


def fixture_tar(item: Item, root: Path) -> bytes | None:
    """A tar of the item's `workspace.fixture` folder (resolved as `agentic.spec` does), or None."""
    ws = item.metadata.get("workspace")
    if not isinstance(ws, dict) or "fixture" not in ws:
        return None
    base = Path(str(item.metadata.get(TASK_DIR_KEY) or root))
    folder = (base / str(ws["fixture"])).resolve()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(str(folder), arcname="fixture", filter=lambda t: None if t.name.endswith("/.git") else t)
    return buf.getvalue()


def localize(item: Item, tar: bytes | None, tmp: Path | None = None) -> Item:
    """On the worker: unpack the shipped fixture (once per content) and point the item at it."""
    if tar is None:
        return item
    digest = hashlib.sha1(tar).hexdigest()[:16]
    home = (tmp or Path(tempfile.gettempdir())) / "skillgit-ray-fixtures" / digest
    if not (home / "fixture").is_dir():
        home.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{digest}-", dir=home.parent))
        with tarfile.open(fileobj=io.BytesIO(tar), mode="r:gz") as archive:
            try:
                archive.extractall(staging, filter="data")
            except TypeError:  # Python < 3.10.12 has no extraction filters (the tar is our own fixture_tar)
                archive.extractall(staging)
        try:
            os.rename(staging, home)  # atomic: concurrent tasks of one worker never see half a fixture
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)  # another task unpacked the same content first
    ws = {**item.metadata["workspace"], "fixture": "fixture"}
    return replace(item, metadata={**item.metadata, "workspace": ws, TASK_DIR_KEY: str(home)})


# ---------------------------------------------------------------------------------------------- the worker side
_WORKER_STUDENTS: dict[str, Student] = {}
_WORKER_LOCK = threading.Lock()


def _worker_root(spec: StudentSpec) -> Path:
    root = Path(spec.root)
    if (root / ".git").exists():
        return root  # same machine or a shared file system: the real project
    from skillgit.store.repository import init_repository  # (a worker without the project needs a repository)

    stand_in = Path(tempfile.gettempdir()) / "skillgit-ray-root" / spec.key[:16]
    if not (stand_in / ".git").exists():
        stand_in.mkdir(parents=True, exist_ok=True)
        init_repository(stand_in, "main")
    return stand_in


def worker_student(spec: StudentSpec) -> Student:
    """The student of `spec`, built once per worker process (credentials come from the worker's environment)."""
    with _WORKER_LOCK:
        if spec.key not in _WORKER_STUDENTS:
            from skillgit.llm import factory

            _WORKER_STUDENTS[spec.key] = factory.build_student(spec.config, _worker_root(spec))
        return _WORKER_STUDENTS[spec.key]


def run_task(spec: StudentSpec, skill: str, item: Item, sample: int, tar: bytes | None) -> dict[str, Any]:
    """One rollout on a worker. An LLMError comes back as data (its class survives no pickling round trip)."""
    try:
        reply = worker_student(spec).run(skill, localize(item, tar), sample)
    except LLMError as exc:
        return {"error": {"message": exc.message, "hint": exc.hint, "kind": exc.kind, "retryable": exc.retryable,
                          "retry_after": exc.retry_after, "status": exc.status}}
    return {"reply": replace(reply, timings=dict(reply.timings))}


# ---------------------------------------------------------------------------------------------- the driver side
@dataclass
class RemoteStudent:
    """A `Student` whose runs execute as Ray tasks (see the module contract)."""

    spec: StudentSpec
    executor: RayExecutor
    attempts: int = 3
    timeout_s: float | None = None
    identity: tuple[str, str] = ("ray", "ray")  # (id, cache identity) of the same student built in the driver
    # the driver-built student's `cache_material(item)` (agent students: task spec, tree, settings), so a Ray
    # run is journaled under exactly the key a thread run would use
    material: Callable[[Item], str] | None = None
    shipped: int = 0  # tasks sent to the cluster (a journaled run is answered in the driver and never shipped)
    lost: int = 0  # attempts whose worker was lost (and that were shipped again)
    _spec_ref: Any = None
    _tars: dict[str, bytes | None] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def id(self) -> str:
        return self.identity[0]

    @property
    def cache_identity(self) -> str:
        # The driver-built student's journal identity: where a run executes is not part of its key, so a Ray run
        # and a thread run of the same project share (and replay) the same journal entries.
        return self.identity[1]

    def cache_material(self, item: Item) -> str:
        return self.material(item) if self.material is not None else ""

    def run(self, skill: str, item: Item, sample: int = 0) -> Reply:
        import ray
        from ray import exceptions as rex

        with self._lock:
            if self._spec_ref is None:
                check_shippable(self.spec)
                self._spec_ref = ray.put(self.spec)
            if item.id not in self._tars:
                self._tars[item.id] = fixture_tar(item, Path(self.spec.root))
        tar = self._tars[item.id]
        check_shippable(skill, item, sample)
        last = ""
        for _ in range(max(1, self.attempts)):
            ref = self.executor.remote_run.remote(self._spec_ref, skill, item, sample, tar)
            with self._lock:
                self.shipped += 1
            try:
                out = ray.get(ref, timeout=self.timeout_s)
            except (rex.RayError, rex.GetTimeoutError) as exc:  # a lost worker/node, a crash, a timeout
                with self._lock:
                    self.lost += 1
                last = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                continue
            if "error" in out:
                err = out["error"]
                raise LLMError(err["message"], err["hint"], kind=err["kind"], retryable=err["retryable"],
                               retry_after=err["retry_after"], status=err["status"])
            reply: Reply = out["reply"]
            return reply
        raise LLMError(f"ray worker lost {self.attempts} times ({last})",
                       "the rollout is unknown and will be tried again; check the cluster with `ray status`",
                       kind="connection", retryable=True)


LOOPBACK = "127.0.0.1"
PROBE_TIMEOUT_S = 3.0
# Ray resolves 127.0.0.1 to the machine's outward address unless it runs "without clusters" (its switch for laptops)
_LOOPBACK_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
_ADDRESS_HINT = ("start that cluster (`ray start --head --node-ip-address 127.0.0.1`), fix env.ray_address, or "
                 "remove it to run on a Ray instance of this run's own on 127.0.0.1")


@dataclass(frozen=True)
class RayTarget:
    """Where a run's Ray is: its own local instance (`address` None) or an existing cluster at `address`."""

    address: str | None
    loopback: bool  # True when every node of it is on this machine's loopback (a local instance always is)


def _host_port(address: str) -> tuple[str, int] | None:
    hostport = address.split("://", 1)[1] if "://" in address else address
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit() or not host:
        return None
    return host.strip("[]"), int(port)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _recorded_cluster() -> str | None:
    """The address the running local cluster recorded (what Ray's own `auto` reads): RAY_ADDRESS, else
    `<ray temp dir>/ray_current_cluster`."""
    if os.environ.get("RAY_ADDRESS"):
        return os.environ["RAY_ADDRESS"]
    folder = Path(os.environ.get("RAY_TMPDIR") or tempfile.gettempdir()) / "ray"
    try:
        return (folder / "ray_current_cluster").read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def ray_target(value: str | None) -> RayTarget:
    """The `RayTarget` of `env.ray_address` (see the module contract); SkillgitError when it names a cluster that
    does not answer, quickly."""
    if value is None or not str(value).strip() or str(value).strip() == "local":
        return RayTarget(None, True)
    value = str(value).strip()
    address = _recorded_cluster() if value == "auto" else value
    if address is None:
        raise SkillgitError("env.ray_address is 'auto', but this machine records no running Ray cluster "
                            "(no RAY_ADDRESS, no ray_current_cluster file)", _ADDRESS_HINT)
    where = _host_port(address)
    if where is None:
        raise SkillgitError(f"env.ray_address {value!r} is not an address (expected host:port, ray://host:port, "
                            "auto or local)", "e.g. env.ray_address: 127.0.0.1:6379")
    try:
        socket.create_connection(where, timeout=PROBE_TIMEOUT_S).close()
    except OSError as exc:
        named = f" (= {address}, recorded by an earlier cluster)" if value == "auto" else ""
        reason = exc.strerror or type(exc).__name__
        raise SkillgitError(f"env.ray_address {value!r}{named}: no Ray cluster answers at {where[0]}:{where[1]} "
                            f"({reason})", _ADDRESS_HINT) from None
    return RayTarget(address, _is_loopback(where[0]))


def keep_ray_on_loopback() -> None:
    """Make this process's Ray put local nodes on 127.0.0.1 (read when ray is imported; set on the module too
    when it already was). Child processes inherit the variable."""
    os.environ.update(_LOOPBACK_ENV)
    constants = sys.modules.get("ray._private.ray_constants")
    if constants is not None and getattr(constants, "ENABLE_RAY_CLUSTER", False):
        constants.ENABLE_RAY_CLUSTER = False  # type: ignore[attr-defined]


class RayExecutor:
    """Rollouts as Ray tasks on a cluster (`address`, see `ray_target`), or on a local instance of this run's own
    on 127.0.0.1 when None."""

    name = "ray"

    def __init__(self, address: str | None = None, *, env_vars: Mapping[str, str] | None = None,
                 num_cpus_per_task: float = 1, attempts: int = 3, timeout_s: float | None = None,
                 init_kwargs: Mapping[str, Any] | None = None):
        if importlib.util.find_spec("ray") is None:
            raise SkillgitError("env.executor is 'ray' but Ray is not installed", RAY_HINT)
        target = ray_target(address)
        if target.loopback:
            keep_ray_on_loopback()
        import ray

        self.attempts = attempts
        self.timeout_s = timeout_s
        self._started = False
        self._restore: dict[str, str | None] = {}
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                      "runtime_env": {"env_vars": dict(env_vars or {})}}
            if target.address is None:  # our own instance: never a leftover cluster, never RAY_ADDRESS
                kwargs.update(address="local", _node_ip_address=LOOPBACK)
                if not os.environ.get("RAY_AUTH_TOKEN") and not os.environ.get("RAY_AUTH_TOKEN_PATH"):
                    self._set_env({"RAY_AUTH_TOKEN": secrets.token_hex(32)})  # else Ray writes ~/.ray/auth_token
                self._restore.setdefault("RAY_AUTH_MODE", os.environ.get("RAY_AUTH_MODE"))  # ray.init sets it
            else:
                kwargs["address"] = target.address
            try:
                ray.init(**{**kwargs, **(init_kwargs or {})})
            except BaseException as exc:
                self.close()  # the run's token leaves the environment
                if target.address is None or not isinstance(exc, Exception):
                    raise
                raise SkillgitError(f"env.ray_address {address!r}: Ray could not connect to {target.address} "
                                    f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})",
                                    _ADDRESS_HINT) from None
            self._started = True
            if target.address is None:
                self._check_loopback()
        # max_retries=0: losing a worker is counted and retried by RemoteStudent (bounded), not silently by Ray.
        self.remote_run = ray.remote(num_cpus=num_cpus_per_task, max_retries=0)(run_task)

    def _set_env(self, values: Mapping[str, str]) -> None:
        for key, value in values.items():
            self._restore.setdefault(key, os.environ.get(key))
            os.environ[key] = value

    def _check_loopback(self) -> None:
        import ray

        outside = sorted({str(n.get("NodeManagerAddress")) for n in ray.nodes()
                          if not _is_loopback(str(n.get("NodeManagerAddress")))})
        if outside:
            self.close()
            raise SkillgitError(f"the local Ray instance came up on {', '.join(outside)}, not {LOOPBACK}: "
                                "stopped it (skillgit's servers listen on loopback only)",
                                "start one yourself (`ray start --head --node-ip-address 127.0.0.1`) and set "
                                "env.ray_address to it, or set env.executor: threads")

    def width(self) -> int:
        import ray

        return max(1, int(ray.cluster_resources().get("CPU", 1)))

    def map(self, fn: Callable[[T], R], items: Sequence[T], *, workers: int) -> list[R]:
        # the driver only waits on remote tasks here: as many at a time as the cluster can run
        return THREADS.map(fn, items, workers=max(workers, self.width()))

    def student(self, spec: StudentSpec, build_local: Callable[[], Student]) -> Student:
        local = build_local()  # in the driver too: credentials and the agent CLI are checked before any shipping
        return RemoteStudent(spec, self, attempts=self.attempts, timeout_s=self.timeout_s,
                             identity=(str(local.id), model_identity(local)),
                             material=getattr(local, "cache_material", None))

    def close(self) -> None:
        if self._started:
            import ray

            ray.shutdown()
            self._started = False
        for key, value in self._restore.items():  # the run's token and Ray's auth switch leave with it
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._restore = {}


def worker_env(cfg: Config, root: Path | None, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables a worker needs to build the student: every `.env` entry and the configured `api_key_env`
    targets, with their values — shipped through `runtime_env`, never as task arguments."""
    from skillgit.dotenv import project_env

    loaded = project_env(root, environ)
    names = set(loaded.dotenv_keys) | {b.api_key_env for b in (cfg.model.teacher, cfg.model.student)
                                       if b.api_key_env}
    return {k: loaded.env[k] for k in sorted(names) if k in loaded.env}


def build_executor(cfg: Config, root: Path | None, *, environ: Mapping[str, str] | None = None) -> Executor:
    """The executor `env.executor` names (`threads` or `ray`, at `env.ray_address`)."""
    kind = getattr(cfg.env, "executor", "threads") or "threads"
    if kind == "threads":
        return THREADS
    if kind == "ray":
        return RayExecutor(getattr(cfg.env, "ray_address", None), env_vars=worker_env(cfg, root, environ))
    raise SkillgitError(f"env.executor must be threads or ray, not {kind!r}", "set env.executor: threads")
