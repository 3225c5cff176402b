"""`textworld` and `alfworld`: games played through Microsoft's TextWorld engine (the `textworld` package), wrapped in
the multi-turn protocol (`skillgit.envs.episode`: `reset`, `step` → observation, done, reward).

`textworld` reads the games TextWorld plays: a game file or a folder of them — `.z8`/`.z5` (what `tw-make`
writes, next to its `.json`; the objective is read from that `.json`) and `.tw-pddl`. One item per game file; the
reward is the game's score over its maximum score (1 when won), done when the game says so (won or lost).

`alfworld` reads ALFWorld's published data (`alfworld-download` puts it under `$ALFWORLD_DATA/json_2.1.1/`): one
split's folder (`json_2.1.1/train`, `valid_seen`, `valid_unseen`; split by `env.split_ratio`, or a folder with
`train/`, `val/`, `test/` inside) walked for trial folders holding `traj_data.json` and either `game.tw-pddl`
(the released games; those marked unsolvable are skipped) or `initial_state.pddl` (built into a game with the
domain and grammar the `alfworld` package ships, as `alfworld-generate` does). Trials with movable receptacles
or sliced objects are skipped, as ALFWorld's own `AlfredTWEnv` does; `env.options.task_types` (ALFWorld's
numbers 1–6) narrows the task types. The task text is ALFWorld's template for the trial's task type (chosen by
the item's id, so a run is reproducible; ALFWorld picks one at random; a released `game.tw-pddl` keeps the task
its grammar already holds). Entities are named as ALFWorld names them (`AlfredDemangler`: "pencil 1",
"dresser 1"). Reward 1 when the goal holds (ALFWorld's `won`), and the episode ends there.

Commands are matched the way the engines expect them (lower case, single spaces, no trailing full stop); for
ALFWorld, `put X in/on Y` (the older wording most prompts teach) is played as the engine's `move X to Y` when that
is a valid command. `env.options.show_commands: true` appends the valid commands to every observation (ALFWorld's
"admissible commands"; off by default, as in the text-only agents the paper compares with).

Both need optional packages: the `textworld` extra (`textworld`) and the `alfworld` extra (`alfworld`, which pulls
`textworld[pddl]`); without them `load` raises a ConfigError naming the extra. Nothing is downloaded: games are
local files (`tw-make` generates TextWorld games offline; ALFWorld's data is fetched once with `alfworld-download`
on a machine that is online). The engines' native parts (jericho, fast-downward) are entered under one lock, so
rollouts on several threads never step two games at once; each episode loads its own game and closes it.
"""

from __future__ import annotations

import importlib.util
import json
import re
import threading
import warnings
import zlib
from pathlib import Path
from typing import Any

from skillgit.envs.episode import EpisodeEnv, TextEnvironment, Transition
from skillgit.errors import ConfigError
from skillgit.tasks import TaskFileError
from skillgit.types import Item

_ENGINE = threading.Lock()
GAME_SUFFIXES = (".z8", ".z5", ".tw-pddl")
TASK_TYPES = {1: "pick_and_place_simple", 2: "look_at_obj_in_light", 3: "pick_clean_then_place_in_recep",
              4: "pick_heat_then_place_in_recep", 5: "pick_cool_then_place_in_recep", 6: "pick_two_obj_and_place"}

TEXTWORLD_SKILL = """---
name: textworld
description: Play a TextWorld text adventure, one command per turn, to complete the quest you are given.
---

# Playing TextWorld games

Read the objective and each observation. Reply with exactly one command per turn, such as
`go north`, `open chest`, `take key from table`, `put key on shelf`, `look`, `inventory`, `examine X`.
"""

ALFWORLD_SKILL = """---
name: alfworld
description: Complete a household task in ALFWorld's text environment, one command per turn.
---

# Acting in ALFWorld

Reply with exactly one command per turn. Commands: go to RECEPTACLE, open RECEPTACLE, close RECEPTACLE,
take OBJECT from RECEPTACLE, move OBJECT to RECEPTACLE, use OBJECT, heat OBJECT with RECEPTACLE,
cool OBJECT with RECEPTACLE, clean OBJECT with RECEPTACLE, examine THING, inventory, look.
Objects and receptacles are named with their number, as the observations show them ("pencil 1", "drawer 2").
"""


def _need(package: str, extra: str, env: str) -> Any:
    """The optional engine package, or a ConfigError naming the extra that installs it."""
    try:
        if package == "alfworld":
            import alfworld.agents.environment.alfred_tw_env as module  # pulls textworld and its PDDL engine
        else:
            import textworld as module
    except ImportError as exc:
        raise ConfigError(f"env.name: the {env} environment needs the `{package}` package, which is not installed "
                          f"({exc})"[:300],
                          f"install skillgit's `{extra}` extra into this environment (pip install "
                          f"'{package}' also works){'; ALFWorld data: alfworld-download' * (extra == 'alfworld')}"
                          ) from None
    return module


def normalise(action: str) -> str:
    return " ".join(action.lower().split()).rstrip(".!").strip()


_STATUS = re.compile(r"^>\s*(?:-=.*=-.*)?$")  # the z-machine's prompt line with its status (room, score)


def clean(feedback: str) -> str:
    """An engine's text as the student reads it: without the ASCII-art banner (lines without a letter), the
    z-machine's `>` prompt and status line, and runs of blank lines."""
    lines = [line.rstrip() for line in feedback.splitlines()]
    kept = [line for line in lines if not _STATUS.match(line.strip()) and (not line.strip() or re.search(
        r"[A-Za-z]", line))]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip()


_PUT = re.compile(r"^put (.+?) (?:in/on|in|on|into|onto) (.+)$")


class EngineWorld:
    """One episode of one TextWorld game (any backend), in the multi-turn protocol. `env` is a loaded TextWorld
    environment; every call into it holds the engine lock."""

    def __init__(self, env: Any, show_commands: bool, aliases: bool):
        self.env = env
        self.show_commands = show_commands
        self.aliases = aliases
        self.valid: list[str] = []

    def _observe(self, state: Any) -> str:
        text = clean(str(state.feedback or ""))
        self.valid = list(state.get("admissible_commands") or [])
        if self.show_commands and self.valid:
            text += "\nValid commands: " + ", ".join(self.valid)
        return text

    def _reward(self, state: Any) -> float:
        if state.get("won"):
            return 1.0
        most = state.get("max_score")
        score = state.get("score") or 0
        return max(0.0, min(1.0, score / most)) if isinstance(most, (int, float)) and most > 0 else 0.0

    def reset(self) -> str:
        with _ENGINE:
            state = self.env.reset()
        return self._observe(state)

    def step(self, action: str) -> Transition:
        command = normalise(action)
        match = _PUT.match(command) if self.aliases else None
        if match and command not in self.valid and f"move {match[1]} to {match[2]}" in self.valid:
            command = f"move {match[1]} to {match[2]}"
        with _ENGINE:
            state, _, done = self.env.step(command)
        return Transition(self._observe(state), bool(done or state.get("won") or state.get("lost")),
                          self._reward(state))

    def close(self) -> None:
        with _ENGINE:
            self.env.close()


def _show_commands(options: dict[str, Any]) -> bool:
    value = options.get("show_commands", False)
    if not isinstance(value, bool):
        raise ConfigError(f"env.options.show_commands: must be true or false, got {value!r}",
                          "show_commands: true appends the valid commands to every observation")
    return value


def _games(path: Path) -> list[Path]:
    path = Path(path)
    if path.is_file() and path.suffix == ".json" and path.with_suffix(".z8").is_file():
        path = path.with_suffix(".z8")  # tw-make's .json beside its game (how a split folder lists it)
    if path.is_file():
        found = [path] if path.name.endswith(GAME_SUFFIXES) else []
    elif path.is_dir():
        found = sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(GAME_SUFFIXES))
    else:
        raise TaskFileError(f"env.tasks: games not found: {path}",
                            "point env.tasks at a game file or a folder of games (tw-make writes .z8 games)")
    if not found:
        raise TaskFileError(f"{path}: no TextWorld games (.z8, .z5, .tw-pddl)",
                            "generate some with `tw-make` (the textworld package) or point at a folder of games")
    return found


def _objective(game: Path) -> str:
    """The game's objective from the `.json` tw-make writes beside it (a `.tw-pddl` game tells it at reset)."""
    beside = game.with_suffix(".json")
    if game.suffix in (".z8", ".z5") and beside.is_file():
        try:
            data = json.loads(beside.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return ""
        return str(data.get("objective") or "") if isinstance(data, dict) else ""
    return ""


class TextWorldGames(EpisodeEnv):
    name = "textworld"
    summary = ("TextWorld text adventures (tw-make games), multi-turn through the textworld engine"
               + ("" if importlib.util.find_spec("textworld") else " (needs the `textworld` extra)"))
    metric = "success rate (won; soft: score / max score)"
    source = "games generated with TextWorld's `tw-make` (.z8 + .json) or .tw-pddl files; a file or a folder"
    seed_skill = TEXTWORLD_SKILL
    options_default = {"max_turns": 30}

    def load(self, path: Path) -> list[Item]:
        _need("textworld", "textworld", self.name)
        root = Path(path)
        items = []
        for game in _games(root):
            ident = game.relative_to(root).with_suffix("").as_posix() if root.is_dir() else game.stem
            items.append(Item(ident, _objective(game) or f"Play {game.name} to the end.", None,
                              {"game": str(game.resolve())}))
        return items

    def make(self, item: Item) -> TextEnvironment:
        textworld = _need("textworld", "textworld", self.name)
        infos = textworld.EnvInfos(admissible_commands=True, won=True, lost=True, score=True, max_score=True)
        with _ENGINE, warnings.catch_warnings():
            # jericho warns that it has no score table for tw-make's games: TextWorld's wrapper keeps the score
            warnings.simplefilter("ignore")
            env = textworld.start(item.metadata["game"], request_infos=infos)
        return EngineWorld(env, _show_commands(self.options), aliases=False)


def _task_types(options: dict[str, Any]) -> set[str]:
    chosen = options.get("task_types", list(TASK_TYPES))
    if not isinstance(chosen, list) or not chosen or any(c not in TASK_TYPES for c in chosen):
        raise ConfigError(f"env.options.task_types: must be a list of ALFWorld task type numbers, got {chosen!r}",
                          "choose from " + ", ".join(f"{k} ({v})" for k, v in TASK_TYPES.items()))
    return {TASK_TYPES[c] for c in chosen}


def _trial(traj: Path, types: set[str]) -> dict[str, Any] | None:
    """One trial folder as an item's metadata, or None when ALFWorld's own loader skips it."""
    folder = traj.parent
    if "movable" in str(folder) or "Sliced" in str(folder):
        return None
    try:
        data = json.loads(traj.read_text(encoding="utf-8"))
        kind, params = data["task_type"], data["pddl_params"]
        target, parent = str(params["object_target"]), str(params["parent_target"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise TaskFileError(f"{traj}: not an ALFWorld traj_data.json ({type(exc).__name__}: {exc})"[:300],
                            "each trial folder holds ALFWorld's traj_data.json (task_type, pddl_params)") from None
    if kind not in types:
        return None
    game = folder / "game.tw-pddl"
    if game.is_file():
        try:
            solvable = json.loads(game.read_text(encoding="utf-8")).get("solvable", True)
        except (OSError, ValueError, AttributeError):
            raise TaskFileError(f"{game}: not a TextWorld PDDL game (JSON)", "re-download the ALFWorld data") from None
        if solvable is False:
            return None
    elif not (folder / "initial_state.pddl").is_file():
        return None
    return {"trial": str(folder.resolve()), "task_type": kind, "object": target, "parent": parent,
            "toggle": str(params.get("toggle_target") or ""), "mrecep": str(params.get("mrecep_target") or ""),
            "sliced": bool(params.get("object_sliced"))}


def task_text(meta: dict[str, Any], ident: str) -> str:
    """ALFWorld's templated task description for a trial (its template picked by the item's id)."""
    from alfworld.gen import goal_library

    kind = meta["task_type"] + ("_slice" if meta["sliced"] else "")
    templates = goal_library.gdict[kind]["templates"]
    template = templates[zlib.crc32(ident.encode()) % len(templates)]
    return template.format(obj=meta["object"].lower(), recep=meta["parent"].lower(),
                           toggle=meta["toggle"].lower(), mrecep=meta["mrecep"].lower())


class ALFWorld(EpisodeEnv):
    name = "alfworld"
    summary = ("ALFWorld household tasks (text), multi-turn through the alfworld/TextWorld PDDL engine"
               + ("" if importlib.util.find_spec("alfworld") else " (needs the `alfworld` extra)"))
    metric = "success rate (reward 1 when the task's goal holds)"
    source = ("ALFWorld's json_2.1.1 data (`alfworld-download`: trial folders with traj_data.json and "
              "game.tw-pddl or initial_state.pddl)")
    seed_skill = ALFWORLD_SKILL
    sample = "json_2.1.1/train"
    options_default = {"max_turns": 50}

    def load(self, path: Path) -> list[Item]:
        _need("alfworld", "alfworld", self.name)
        root = Path(path)
        if root.is_file() and root.name == "traj_data.json":  # one trial (a split folder's file, see tasks.py)
            trajs, root = [root], root.parent.parent.parent
        elif root.is_dir():
            trajs = sorted(root.rglob("traj_data.json"))
        else:
            raise TaskFileError(f"env.tasks: ALFWorld data folder not found: {root}",
                                "point env.tasks at one split of ALFWorld's json_2.1.1 (e.g. json_2.1.1/train)")
        types, items = _task_types(self.options), []
        for traj in trajs:
            meta = _trial(traj, types)
            if meta is not None:
                ident = traj.parent.relative_to(root).as_posix()
                items.append(Item(ident, task_text(meta, ident), None, meta))
        if not items:
            raise TaskFileError(f"{root}: no ALFWorld trials of the chosen task types",
                                "each trial folder holds traj_data.json with game.tw-pddl or initial_state.pddl")
        return items

    def game_data(self, item: Item) -> dict[str, Any]:
        """The trial's game as TextWorld's PddlEnv loads it, with the task text put into its grammar."""
        from alfworld.info import ALFRED_PDDL_PATH, ALFRED_TWL2_PATH

        folder = Path(item.metadata["trial"])
        game = folder / "game.tw-pddl"
        if game.is_file():
            data = json.loads(game.read_text(encoding="utf-8"))
        else:
            data = {"pddl_domain": Path(ALFRED_PDDL_PATH).read_text(encoding="utf-8"),
                    "grammar": Path(ALFRED_TWL2_PATH).read_text(encoding="utf-8"),
                    "pddl_problem": (folder / "initial_state.pddl").read_text(encoding="utf-8")}
        data["grammar"] = data["grammar"].replace("UNKNOWN GOAL", item.input)
        return data

    def make(self, item: Item) -> TextEnvironment:
        twenv = _need("alfworld", "alfworld", self.name)
        import textworld
        from textworld.envs import PddlEnv

        infos = textworld.EnvInfos(won=True, admissible_commands=True)
        data = self.game_data(item)
        with _ENGINE:
            env = twenv.AlfredDemangler(PddlEnv(infos), shuffle=False)
            env.load(data)
        return EngineWorld(env, _show_commands(self.options), aliases=True)
