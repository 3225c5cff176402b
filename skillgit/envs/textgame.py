"""`textgame`: a small household text game written here, played through the multi-turn protocol
(`skillgit.envs.episode`) — the shape of ALFWorld's tasks (go somewhere, find an object, open a receptacle, put the
object in it) in a few dozen lines, so the protocol is tested offline without the `alfworld` package.

Item format (one JSON object per line):
  {"id": "g1", "start": "hall", "goal": {"put": "apple", "in": "fridge"},
   "rooms": {"hall": {"text": "A narrow hall.", "exits": {"north": "kitchen"}, "items": ["apple"]},
             "kitchen": {"exits": {"south": "hall"}, "containers": {"fridge": {"closed": true}}}}}
Commands: look, inventory, go DIR (or DIR alone), take X, drop X, open X, close X, put X in Y. The episode is done
(reward 1) when the goal object is in the goal container; the environment never tells the solution.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from skillgit.envs import rows
from skillgit.envs.episode import EpisodeEnv, TextEnvironment, Transition
from skillgit.tasks import TaskFileError
from skillgit.types import Item

DIRECTIONS = ("north", "south", "east", "west", "up", "down")

SEED_SKILL = """---
name: textgame
description: Act in a household text game, one command per turn, to finish the task you are given.
---

# Playing the text game

You see what happens after each command. Reply with exactly one command per turn.

Commands: look, inventory, go DIRECTION, take OBJECT, drop OBJECT, open OBJECT, close OBJECT,
put OBJECT in CONTAINER.
"""


class Game:
    """One episode of one item (a deep copy of its world, so episodes never share state)."""

    def __init__(self, spec: dict[str, Any]):
        self.rooms: dict[str, dict[str, Any]] = copy.deepcopy(spec["rooms"])
        self.here: str = spec["start"]
        self.goal = spec["goal"]
        self.carrying: list[str] = []
        for room in self.rooms.values():
            room.setdefault("items", [])
            room.setdefault("exits", {})
            for box in room.setdefault("containers", {}).values():
                box.setdefault("items", [])
                box.setdefault("closed", False)

    def _room(self) -> dict[str, Any]:
        return self.rooms[self.here]

    def describe(self) -> str:
        room = self._room()
        parts = [f"You are in the {self.here}. {room.get('text', '')}".strip()]
        for name, box in room["containers"].items():
            inside = ", ".join(box["items"]) or "nothing"
            parts.append(f"There is a {name} here ({'closed' if box['closed'] else f'open, holding {inside}'}).")
        if room["items"]:
            parts.append(f"You see: {', '.join(room['items'])}.")
        parts.append(f"Exits: {', '.join(room['exits']) or 'none'}.")
        return " ".join(parts)

    def reset(self) -> str:
        return f"{self.describe()}\nYour task: put the {self.goal['put']} in the {self.goal['in']}."

    def _done(self) -> bool:
        for room in self.rooms.values():
            box = room["containers"].get(self.goal["in"])
            if box is not None and self.goal["put"] in box["items"]:
                return True
        return False

    def step(self, action: str) -> Transition:
        text = self._apply(" ".join(action.lower().split()))
        done = self._done()
        return Transition(text + (" Task complete." if done else ""), done, 1.0 if done else 0.0)

    def _apply(self, command: str) -> str:
        room = self._room()
        words = command.split()
        if not words:
            return "Nothing happens."
        verb, rest = words[0], " ".join(words[1:]).removeprefix("the ").strip()
        if command in ("look", "l"):
            return self.describe()
        if command in ("inventory", "i"):
            return f"You carry: {', '.join(self.carrying) or 'nothing'}."
        if verb == "go" or verb in DIRECTIONS:
            way = rest if verb == "go" else verb
            if way not in room["exits"]:
                return "You cannot go that way."
            self.here = room["exits"][way]
            return self.describe()
        if verb == "take":
            if rest in room["items"]:
                room["items"].remove(rest)
                self.carrying.append(rest)
                return f"You take the {rest}."
            for box in room["containers"].values():
                if rest in box["items"] and not box["closed"]:
                    box["items"].remove(rest)
                    self.carrying.append(rest)
                    return f"You take the {rest}."
            return f"There is no {rest} here you can take."
        if verb == "drop" and rest in self.carrying:
            self.carrying.remove(rest)
            room["items"].append(rest)
            return f"You drop the {rest}."
        if verb in ("open", "close") and rest in room["containers"]:
            room["containers"][rest]["closed"] = verb == "close"
            return f"You {verb} the {rest}."
        if verb == "put" and " in " in f" {rest} ":
            thing, _, target = rest.partition(" in ")
            thing, target = thing.strip(), target.strip().removeprefix("the ").strip()
            box = room["containers"].get(target)
            if thing not in self.carrying:
                return f"You are not carrying a {thing}."
            if box is None:
                return f"There is no {target} here."
            if box["closed"]:
                return f"The {target} is closed."
            self.carrying.remove(thing)
            box["items"].append(thing)
            return f"You put the {thing} in the {target}."
        return "Nothing happens."


def _check(spec: dict[str, Any], where: str) -> None:
    rooms = spec.get("rooms")
    goal = spec.get("goal")
    if not isinstance(rooms, dict) or not rooms or not all(isinstance(r, dict) for r in rooms.values()):
        raise TaskFileError(f"{where}: `rooms` must map room names to rooms", "see skillgit/envs/textgame.py")
    if spec.get("start") not in rooms:
        raise TaskFileError(f"{where}: `start` must name one of the rooms ({', '.join(rooms)})",
                            "set start to the room the player begins in")
    if not isinstance(goal, dict) or not isinstance(goal.get("put"), str) or not isinstance(goal.get("in"), str):
        raise TaskFileError(f"{where}: `goal` must be {{\"put\": OBJECT, \"in\": CONTAINER}}",
                            'e.g. "goal": {"put": "apple", "in": "fridge"}')
    for name, room in rooms.items():
        for way, target in (room.get("exits") or {}).items():
            if target not in rooms:
                raise TaskFileError(f"{where}: room '{name}' exit '{way}' leads to unknown room '{target}'",
                                    "every exit must name a room of `rooms`")


class TextGame(EpisodeEnv):
    name = "textgame"
    summary = "household text game (ALFWorld-shaped), multi-turn: observation → action → …, reward at the end"
    metric = "success rate (reward 1 when the task is done)"
    source = "written here (examples/envs/textgame/games.jsonl); the protocol fits ALFWorld/TextWorld"
    seed_skill = SEED_SKILL
    sample = "games.jsonl"
    options_default = {"max_turns": 15}

    def load(self, path: Path) -> list[Item]:
        def item(row: rows.Row, where: str, item_id: str) -> Item:
            _check(row, where)
            spec = {k: row[k] for k in ("start", "goal", "rooms")}
            task = f"Put the {row['goal']['put']} in the {row['goal']['in']}."
            return Item(item_id, task, None, {"game": spec})

        return rows.items(path, item)

    def make(self, item: Item) -> TextEnvironment:
        return Game(item.metadata["game"])
