"""The multi-turn text environment protocol, and the `Env` that runs an episode of one against the student.

Protocol (`TextEnvironment`; ALFWorld's and TextWorld's environments fit it behind a thin wrapper):
- `reset() -> str`: start the episode, return the first observation (the task is told there);
- `step(action) -> Transition(observation, done, reward)`: apply one action; `reward` is the episode's reward so
  far in [0, 1] (the last one counts); after `done` no more steps are taken;
- `close()` (optional): called once when the episode ends, however it ends (an engine's game is released there).

`EpisodeEnv.run` plays one episode: each turn is ONE `student.run` with the skill as system prompt and, as the
user message, the transcript so far and a request for the next action (so every turn is journaled: a killed run
resumes with the finished turns answered from the journal, nothing paid twice). The student's reply, stripped to
its first non-empty line (an `Action:` prefix dropped), is the action. The episode ends when the environment says
done or after `max_turns` actions (`env.options.max_turns`, default `MAX_TURNS`).

What the teacher reads (`Reply.trace`) is the episode's full transcript — every observation, action and the final
reward — rendered as an agent trace (`skillgit.agents.trace.AgentTrace.render`), so it is shortened by the same
rules: observations cut in the middle past `RESULT_CHARS`, actions past `CALL_CHARS`, the middle steps of a very
long episode omitted. The score is the reward: hard = 1 when it reaches `success` (default 1.0), soft = reward,
with neutral feedback (turns used, whether the episode finished) that never states the environment's solution.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol

from skillgit.agents.trace import AgentTrace, Step, cut
from skillgit.envs.base import Env
from skillgit.errors import ConfigError
from skillgit.llm.base import Reply, Student
from skillgit.types import Item, Score, Usage

MAX_TURNS = 30
HISTORY_CHARS = 12_000  # the transcript a turn's prompt shows; older turns are cut from the front past this


@dataclass(frozen=True)
class Transition:
    observation: str
    done: bool
    reward: float = 0.0


class TextEnvironment(Protocol):
    def reset(self) -> str: ...

    def step(self, action: str) -> Transition: ...


_ACTION_PREFIX = re.compile(r"^\s*(?:>\s*|action\s*[:：]\s*)", re.I)


def parse_action(text: str) -> str:
    """The action in a student's reply: its first non-empty line, without a `>` or `Action:` prefix."""
    for line in str(text or "").splitlines():
        line = _ACTION_PREFIX.sub("", line).strip().strip("`").strip()
        if line:
            return line[:200]
    return ""


class EpisodeEnv(Env):
    """An `Env` whose items are played as episodes of a `TextEnvironment` (`make(item)` builds one)."""

    success: float = 1.0

    def make(self, item: Item) -> TextEnvironment:
        raise NotImplementedError

    @property
    def max_turns(self) -> int:
        value = self.options.get("max_turns", MAX_TURNS)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"env.options.max_turns: must be a whole number >= 1, got {value!r}",
                              f"e.g. max_turns: {MAX_TURNS}")
        return value

    def prompt(self, item: Item, history: list[tuple[str, str]], observation: str) -> str:
        """The user message of one turn: the transcript so far, the latest observation, the request."""
        lines = []
        for seen, action in history:
            lines += [seen.strip(), f"> {action}"]
        lines.append(observation.strip())
        text = "\n".join(lines)
        if len(text) > HISTORY_CHARS:
            text = "[… earlier turns omitted …]\n" + text[-HISTORY_CHARS:]
        return f"{text}\n\nReply with your next action only, on one line."

    def run(self, student: Student, skill: str, item: Item, sample: int = 0) -> Reply:
        world = self.make(item)
        try:
            return self._play(world, student, skill, item, sample)
        finally:
            close = getattr(world, "close", None)
            if callable(close):
                close()

    def _play(self, world: TextEnvironment, student: Student, skill: str, item: Item, sample: int) -> Reply:
        observation = world.reset()
        steps: list[Step] = [Step("result", text=observation)]
        history: list[tuple[str, str]] = []
        usage, cached, reward, done, action = Usage(), True, 0.0, False, ""
        for turn in range(1, self.max_turns + 1):
            turn_item = Item(item.id, self.prompt(item, history, observation), None,
                             {**item.metadata, "turn": turn})
            reply = student.run(skill, turn_item, sample)  # an LLMError ends the run: an unknown trajectory
            usage, cached = usage + reply.usage, cached and reply.cached
            action = parse_action(reply.text)
            step = world.step(action)
            steps += [Step("call", "action", action or "(no action)"), Step("result", text=step.observation)]
            history.append((observation, action or "(no action)"))
            observation, reward, done = step.observation, float(step.reward), step.done
            if done:
                break
        turns = len(history)
        steps.append(Step("text", text=f"episode {'ended' if done else 'stopped'} after {turns} action"
                                       f"{'s' * (turns != 1)}; reward {reward:g}"))
        score = self.final_score(world, reward, done, turns)
        return Reply(action, usage, trace=AgentTrace(action, tuple(steps)).render(), cached=cached, score=score)

    def final_score(self, world: TextEnvironment, reward: float, done: bool, turns: int) -> Score:
        """The episode's score; an environment that judges its own end state (an answer it recorded) overrides
        this to give feedback of its own (never its solution)."""
        return self.episode_score(reward, done, turns)

    def episode_score(self, reward: float, done: bool, turns: int) -> Score:
        reward = min(1.0, max(0.0, reward))
        if reward >= self.success - 1e-9:
            return Score(1.0, reward, f"task completed in {turns} actions (reward {reward:g})")
        how = (f"the episode ended after {turns} actions without completing the task" if done
               else f"ran out of turns ({self.max_turns} actions) without completing the task")
        return Score(0.0, reward, cut(f"{how}; reward {reward:g}", 300))

    def score(self, item: Item, output: str) -> Score:
        # Only reached when a run's reply came back without its score (it always has one): say so, do not guess.
        from skillgit.scorers import ScorerError

        raise ScorerError(f"environment '{self.name}' scores whole episodes, not a final answer",
                          "run its items through the environment (env.name), not a plain scorer")

    def teacher_reference(self, item: Item) -> Any:
        return None  # the environment's solution is the judge's, never shown to a teacher
