"""The simulated teacher: answers every stage of the teacher protocol from the prompt text alone.

It reads its user message as a real teacher would (docs/ARCHITECTURE.md: first line `<stage>NAME</stage>`,
then tagged data blocks) and answers with that stage's JSON object. It has no access to the world's hidden
rules, the items or the student: `complete()` receives the `Request` and nothing else, and the only world
modules it uses are its eyes (diagnose.py: symptoms from output vs expected text) and its repertoire
(lexicon.py: candidate fixes per symptom, good, vague and harmful alike).

Behaviour, per stage:
- reflect: failures → symptoms per trajectory, most frequent first; per symptom one idea, drawn with weights
  (good 1 - vague_rate - harmful_rate, vague, harmful; the most obvious wording likeliest) and mostly appended,
  sometimes inserted after a related line or replacing its own earlier wording; a skill line that looks like the
  symptom's cause is deleted or rewritten instead some of the time (`CAUSE_FIX_RATE`); sometimes
  (`off_target_rate`) an idea unrelated to any symptom. Successes →
  now and then a reinforcement of an observed pattern, or harmless padding. Never proposes an idea whose text
  is in `<rejected_edits>` or noted as "avoid:" in `<meta_skill>`, nor one already in the skill; without those
  blocks it happily repeats rejected ideas (that is what the negative buffer is for). At most `<budget>` edits.
  Recalled past failures (`<recalled_trajectory>` blocks, optimizer.recall_k) count half a current failure
  toward a symptom's rank (and a symptom only they show comes after the current ones).
- merge: dedupe identical / near-identical edits, summing support into `merged_from`; rank: by support, with
  noise; lr: step size from the batch failure rate within the bounds; slow_update: guidance from persistent
  failures' symptoms in `<comparison>`; meta_skill: notes on rejected and accepted ideas; meta_reflect:
  consolidate duplicate lines and retry rejected directions with a different idea; rewrite / full_rewrite:
  apply suggestions to the text (front matter and protected regions kept verbatim); pick: the candidate with the
  most concrete, least chatty instructions.
- With probability `malformed_rate` the reply is malformed (truncated JSON, prose, or a wrong shape). A caller's
  repair turn ("your previous reply could not be used …") is answered like the original request (fresh noise).
Randomness is seeded by (world seed, the whole request): the same prompt always gets the same answer.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from typing import Any, Callable, Sequence

from skillgit.llm.base import LLMError, Reply, Request
from skillgit.world import agentic_teacher, probing, tags
from skillgit.world.common import digest, param, seeded_rng, usage
from skillgit.world.diagnose import diagnose, kind_of, split_fields
from skillgit.world.lexicon import OFF_TARGET, REINFORCE, ideas_for, norm, topic_of_text
from skillgit.world.textedit import apply_edit, editable_lines

STAGES = ("reflect", "merge", "rank", "lr", "slow_update", "meta_skill", "meta_reflect", "rewrite",
          "full_rewrite", "pick", "probe")
CAUSE_FIX_RATE = 0.3  # how often a suspected cause line is deleted or rewritten rather than argued with
_NEGATED = re.compile(r"\b(not|never|no|avoid|without|instead|rather)\b|n't\b", re.I)
_REGION = re.compile(r"<!--\s*skillgit:([\w.-]+)\s*-->\n?(.*?)\n?<!--\s*/skillgit:\1\s*-->", re.S)


class _Prompt:
    """What the teacher can see in one user message."""

    def __init__(self, text: str):
        self.text = text
        self.skill = tags.first(text, "skill") or ""
        budget = tags.ints(tags.first(text, "budget"))
        self.budget = max(0, budget[0]) if budget else 4
        self.avoid: set[str] = set()
        for rejected in tags.find(tags.first(text, "rejected_edits") or "", "rejected"):
            content = rejected.first("content") or ""
            if rejected.attrs.get("op") == "delete" or not content.strip():
                self.avoid.add("delete:" + norm(rejected.first("target") or ""))
            else:
                self.avoid.add(norm(content))
        for line in (tags.first(text, "meta_skill") or "").splitlines():
            m = re.match(r"\s*[-*]\s*avoid:\s*(.+)", line, re.I)
            if m:
                self.avoid.add(norm(m.group(1)))
        self.lines = editable_lines(self.skill)
        self.skill_norm = norm(self.skill)

    def allowed(self, idea: str) -> bool:
        return norm(idea) not in self.avoid and norm(idea) not in self.skill_norm


class SimulatedTeacher:
    """An `LLM` (see skillgit/llm/base.py) simulating the teacher; thread-safe (no shared mutable state)."""

    def __init__(self, cfg=None, model: str = "sim-teacher"):
        self.cfg = cfg
        self.model = model
        self.seed = int(param(cfg, "seed"))
        self.malformed_rate = float(param(cfg, "malformed_rate"))
        self.vague_rate = float(param(cfg, "vague_rate"))
        self.harmful_rate = float(param(cfg, "harmful_rate"))
        self.off_target_rate = float(param(cfg, "off_target_rate"))
        self.latency_s = float(param(cfg, "latency_s"))
        self._id = f"simulated:{model}#" + digest(self.seed, self.malformed_rate, self.vague_rate,
                                                   self.harmful_rate, self.off_target_rate)

    @property
    def id(self) -> str:
        return self._id

    # ------------------------------------------------------------------------------------------ entry point
    def complete(self, request: Request) -> Reply:
        started = time.monotonic()
        # The task is the last user message that starts with a stage line; later user messages (a caller's
        # "your previous reply could not be used, answer again" repair turn) just ask for the same answer again.
        users = [m.content for m in request.messages if m.role == "user"]
        text = next((u for u in reversed(users) if tags.stage_of(u) in STAGES), users[-1] if users else "")
        stage = tags.stage_of(text)
        if stage not in STAGES:
            raise LLMError(f"simulated teacher: the user message does not start with a known <stage>NAME</stage> "
                           f"line (got {text[:40]!r})", "render teacher prompts with skillgit.prompts.render",
                           kind="bad_request")
        rng = seeded_rng(self.seed, "teacher", request.cache_key_material())
        malformed = rng.random() < self.malformed_rate
        answer = self.answer(stage, text, rng)
        out = self._malform(answer, rng) if malformed else json.dumps(answer, ensure_ascii=False)
        if self.latency_s > 0:
            time.sleep(self.latency_s)
        prompt_text = "".join(m.content for m in request.messages)
        return Reply(text=out, usage=usage(prompt_text, out), model=self.model,
                     latency_s=round(time.monotonic() - started, 6))

    def answer(self, stage: str, text: str, rng) -> dict[str, Any]:
        """The well-formed JSON answer (as a dict) to the user message `text` of `stage`. Prompts about the coding
        world (a skill package, agent traces, verifier output) go to `agentic_teacher` first."""
        coded = agentic_teacher.answer(stage, text, rng, self.cfg)
        if coded is not None:
            return coded
        handler: Callable[[_Prompt, Any], dict[str, Any]] = getattr(self, f"_stage_{stage}")
        return handler(_Prompt(text), rng)

    @staticmethod
    def _malform(answer: dict[str, Any], rng) -> str:
        kind = rng.choice(("truncated", "prose", "wrong_shape"))
        full = json.dumps(answer, ensure_ascii=False)
        if kind == "truncated":
            return full[: max(1, int(len(full) * rng.uniform(0.2, 0.8)))]
        if kind == "prose":
            return ("Looking at these trajectories, the main problem is formatting. I would tighten the "
                    "instructions about the output format and add an example.")
        return json.dumps({"reasoning": str(answer.get("reasoning", "")), "answer": "see above"})

    # ------------------------------------------------------------------------------------------ reflect
    def _weights(self) -> dict[str, float]:
        return {"good": max(0.0, 1 - self.vague_rate - self.harmful_rate), "vague": self.vague_rate,
                "harmful": self.harmful_rate}

    def _stage_probe(self, p: _Prompt, rng) -> dict[str, Any]:  # deep reflect (world/probing.py)
        return probing.probe_answer(p.text, p.skill_norm, p.avoid, self._weights(), rng)

    def _stage_reflect(self, p: _Prompt, rng) -> dict[str, Any]:
        trajectories = tags.find(p.text, "trajectory")
        failures = [t for t in trajectories if _outcome(t) == "failure"]
        if failures or not trajectories:
            # recalled past failures (optimizer.recall_k) are further evidence, worth half a current one each
            recalled = [t for t in tags.find(p.text, "recalled_trajectory") if _outcome(t) == "failure"]
            return self._reflect_failures(p, failures, rng, recalled)
        return self._reflect_successes(p, trajectories, rng)

    def _symptom_counts(self, trajectories: list[tags.Block],
                        evidence: probing.Evidence) -> tuple[Counter, dict[tuple[str, str], str]]:
        counts: Counter = Counter()
        examples: dict[tuple[str, str], str] = {}
        for t in trajectories:
            expected = t.first("expected")  # a train item's answer; the feedback never quotes it (judge isolation)
            seen = set()
            for s in diagnose(t.first("output") or "", expected):
                key = (s.topic, s.want)
                if (t.attrs.get("id", ""), s.topic) in evidence.slips:
                    continue  # the student said its skill asks for this and it slipped: no edit needed
                if key not in seen:
                    seen.add(key)
                    counts[key] += 1
                    examples.setdefault(key, s.detail)
        return counts, examples

    def _reflect_failures(self, p: _Prompt, failures: list[tags.Block], rng,
                          recalled: Sequence[tags.Block] = ()) -> dict[str, Any]:
        evidence = probing.Evidence.read(p.text)  # deep reflect's transcripts, when the prompt has them
        counts, examples = self._symptom_counts(failures, evidence)
        past, past_examples = self._symptom_counts(list(recalled), probing.Evidence())
        n = len(failures)
        # current symptoms first (recalled failures reorder them); a symptom only recalled ones show comes after
        ordered = sorted([*counts, *(k for k in past if k not in counts)],
                         key=lambda k: (not counts[k], -(counts[k] + 0.5 * past[k]), rng.random()))
        edits: list[dict[str, str]] = []
        taken: set[str] = set(evidence.refuted)
        edits += probing.cause_deletes(evidence, p.skill, p.avoid, taken, p.budget)
        for sym in ordered:
            if len(edits) >= p.budget:
                break
            seen = (f"{counts[sym]} of {n} failures" if counts[sym] else f"{past[sym]} recalled past failure(s)")
            why = f"{seen}: {_describe(sym, examples.get(sym) or past_examples.get(sym, ''))}"
            edit = probing.confirmed_edit(evidence, sym, p.allowed, taken, why) or self._fix(p, sym, why, taken, rng)
            if edit:
                edits.append(edit)
        if failures and len(edits) < p.budget and (not counts or rng.random() < self.off_target_rate):
            idea = _choose([i for i in OFF_TARGET if p.allowed(i) and norm(i) not in taken], rng)
            if idea:
                edits.append(_edit("append", idea, rationale="a general reminder that may help with these failures"))
        summary = "; ".join(f"{counts[k]}/{n} {_describe(k, examples.get(k, ''))}" for k in ordered[:6]
                            if counts[k])
        if not counts:
            summary = ("no expected answers to compare with: cannot tell what went wrong" if failures
                       else "no trajectories")
        return {"reasoning": f"Compared each output with its expected answer. {summary}.",
                "edits": edits, "failure_summary": summary}

    def _fix(self, p: _Prompt, sym: tuple[str, str], why: str, taken: set[str], rng) -> dict[str, str] | None:
        ideas = ideas_for(*sym)
        if ideas is None:
            return None
        own = {norm(t) for t in ideas.good + ideas.vague}
        causes = _causes(p, ideas, sym, own, taken)
        pool = {label: [t for t in getattr(ideas, label) if p.allowed(t) and norm(t) not in taken]
                for label in ("good", "vague", "harmful")}
        # A line that looks like the cause: delete it or rewrite it — but only some of the time; as often, a
        # teacher just adds a counter-instruction next to it (which leaves the cause in place).
        if causes and rng.random() < CAUSE_FIX_RATE:
            edit = _fix_cause(p, causes, pool["good"], taken, why, rng)
            if edit is not None:
                return edit
        weights = self._weights()
        labels = [label for label in pool if pool[label] and weights[label] > 0]
        if not labels:
            return None
        label = rng.choices(labels, [weights[x] for x in labels])[0]
        idea = _favourite(pool[label], rng)
        taken.add(norm(idea))
        return _placed(p, ideas, idea, own, taken, why, rng)

    def _reflect_successes(self, p: _Prompt, successes: list[tags.Block], rng) -> dict[str, Any]:
        patterns: Counter = Counter()
        for t in successes:
            patterns.update(sorted(_observed_patterns(t.first("output") or "")))
        summary = ", ".join(_describe(k, "") for k, _ in patterns.most_common(5)) or "nothing specific"
        edits: list[dict[str, str]] = []
        roll = rng.random()
        if p.budget and roll < 0.3:
            # Reinforce an observed pattern the skill does not mention yet.
            for sym, _ in patterns.most_common():
                ideas = ideas_for(*sym)
                if ideas and not any(w in p.skill.lower() for w in ideas.topic_words[:1]):
                    good = [t for t in ideas.good if p.allowed(t)]
                    if good:
                        edits.append(_edit("append", good[0],
                                           rationale=f"successful outputs show {_describe(sym, '')}"))
                        break
        elif p.budget and roll < 0.6:
            idea = _choose([i for i in REINFORCE if p.allowed(i)], rng)
            if idea:
                edits.append(_edit("append", idea, rationale="keep doing what worked"))
        return {"reasoning": f"{len(successes)} successes; they share: {summary}.", "edits": edits,
                "success_patterns": f"Successful outputs show {summary}."}

    # ------------------------------------------------------------------------------------------ merge / rank / lr
    def _stage_merge(self, p: _Prompt, rng) -> dict[str, Any]:
        groups: list[dict[str, Any]] = []
        for e in tags.find(p.text, "edit"):
            op, target, content = e.attrs.get("op", "append"), e.first("target") or "", e.first("content") or ""
            file = e.attrs.get("file", "")
            support = (tags.ints(e.attrs.get("support")) or [1])[0]
            key = norm(content) if content.strip() else "delete:" + norm(target)
            if key in p.avoid:
                continue  # a careful merger drops what validation already rejected
            words = set(norm(content).split())
            for g in groups:
                if g["op"] == op and g["file"] == file and norm(g["target"]) == norm(target) \
                        and _similar(g["words"], words):
                    g["merged_from"].append(e.attrs.get("id", ""))
                    g["support"] += support
                    break
            else:
                groups.append({"op": op, "file": file, "target": target, "content": content, "words": words,
                               "rationale": e.first("rationale") or "", "merged_from": [e.attrs.get("id", "")],
                               "support": support})
        groups.sort(key=lambda g: -g["support"])
        edits = [{"op": g["op"], "file": g["file"], "target": g["target"], "content": g["content"],
                  "rationale": g["rationale"] + (f" (merged {n})" if (n := len(g["merged_from"])) > 1 else ""),
                  "merged_from": g["merged_from"]} for g in groups]
        return {"reasoning": f"Merged {sum(len(g['merged_from']) for g in groups)} edits into {len(groups)}.",
                "edits": edits}

    def _stage_rank(self, p: _Prompt, rng) -> dict[str, Any]:
        scored = []
        for e in tags.find(p.text, "edit"):
            support = (tags.ints(e.attrs.get("support")) or [1])[0]
            penalty = 100 if norm(e.first("content") or "") in p.avoid else 0
            scored.append((-support + penalty + rng.uniform(0, 0.9), e.attrs.get("id", "")))
        ranking = [i for _, i in sorted(scored)]
        return {"reasoning": "Edits supported by more trajectories first.", "ranking": ranking}

    def _stage_lr(self, p: _Prompt, rng) -> dict[str, Any]:
        try:
            stats = json.loads(tags.first(p.text, "stats") or "{}")
        except ValueError:
            stats = {}
        stats = stats if isinstance(stats, dict) else {}
        bounds = tags.find(p.text, "bounds")
        lo = _num((bounds[0].attrs.get("min") if bounds else None), stats.get("min_edits"), 1)
        hi = _num((bounds[0].attrs.get("max") if bounds else None), stats.get("max_edits"), max(lo, 4))
        lo, hi = int(min(lo, hi)), int(max(lo, hi))
        scored = stats.get("scored") or stats.get("batch")
        if isinstance(stats.get("failures"), (int, float)) and scored:
            failure_rate = float(stats["failures"]) / float(scored)
        elif isinstance(stats.get("hard_mean"), (int, float)):
            failure_rate = 1.0 - float(stats["hard_mean"])
        else:
            failure_rate = 0.5
        num = round(lo + failure_rate * (hi - lo)) + rng.choice((-1, 0, 0, 0, 1))
        num = max(lo, min(hi, num))
        return {"reasoning": f"Failure rate {failure_rate:.2f}: {'larger' if failure_rate > 0.5 else 'smaller'} "
                             f"steps.", "num_edits": num}

    # ------------------------------------------------------------------------------------------ epoch stages
    def _pairs(self, p: _Prompt) -> list[tuple[str, str, str]]:
        """(kind, after_output, expected) of each `<pair>` in `<comparison>`."""
        comparison = tags.first(p.text, "comparison") or ""
        return [(b.attrs.get("kind", ""), b.first("after_output") or b.first("output") or "",
                 b.first("expected") or "") for b in tags.find(comparison, "pair")]

    def _stage_slow_update(self, p: _Prompt, rng) -> dict[str, Any]:
        counts: Counter = Counter()
        kinds: Counter[str] = Counter()
        for kind, output, expected in self._pairs(p):
            kinds[kind] += 1
            if kind in ("regressed", "persistent_failure"):
                counts.update(_unique((s.topic, s.want) for s in diagnose(output, expected)))
        current = [line.strip() for m in _REGION.finditer(p.skill) if m.group(1) == "slow-update"
                   for line in m.group(2).splitlines() if line.strip()]
        bullets = list(current)
        for sym, _ in counts.most_common(3):
            ideas = ideas_for(*sym)
            good = [t for t in (ideas.good if ideas else ()) if norm(t) not in p.skill_norm]
            if good:
                bullets.append("- " + rng.choice(good))
        if kinds["regressed"] and rng.random() < 0.5:
            bullets.append("- When two instructions conflict, follow the more specific one.")
        guidance = "\n".join(dict.fromkeys(bullets[-8:]))
        seen = ", ".join(f"{v} {k}" for k, v in sorted(kinds.items())) or "no pairs"
        return {"reasoning": f"Comparison: {seen}. Persistent symptoms: "
                             f"{', '.join(_describe(k, '') for k, _ in counts.most_common(3)) or 'none'}.",
                "guidance": guidance}

    def _step_edits(self, p: _Prompt, tag: str) -> list[tuple[str, str, str, float]]:
        """(op, target, content, step delta) of every edit in `<accepted_steps>` / `<rejected_steps>`."""
        out = []
        for step in tags.find(tags.first(p.text, tag) or "", "step"):
            delta = _num(step.attrs.get("delta"), None, 0.0)
            for e in step.find("edit"):
                out.append((e.attrs.get("op", ""), e.first("target") or "", e.first("content") or "", float(delta)))
        return out

    def _stage_meta_skill(self, p: _Prompt, rng) -> dict[str, Any]:
        old = tags.first(p.text, "meta_skill") or ""
        avoid = [m.group(1).strip() for m in re.finditer(r"^\s*[-*]\s*avoid:\s*(.+)$", old, re.M | re.I)]
        helped = [m.group(1).strip() for m in re.finditer(r"^\s*[-*]\s*helped:\s*(.+)$", old, re.M | re.I)]
        for _op, target, content, _ in self._step_edits(p, "rejected_steps"):
            avoid.append(content.strip() if content.strip() else f"deleting '{target.strip()}'")
        for _op, _target, content, _ in self._step_edits(p, "accepted_steps"):
            if content.strip():
                helped.append(content.strip())
        counts: Counter = Counter()
        for kind, output, expected in self._pairs(p):
            if kind in ("persistent_failure", "regressed"):
                counts.update(_unique((s.topic, s.want) for s in diagnose(output, expected)))
        lines = ["Teacher notes (simulated teacher memory):"]
        lines += [f"- avoid: {a}" for a in list(dict.fromkeys(avoid))[-12:]]
        lines += [f"- helped: {h}" for h in list(dict.fromkeys(helped))[-8:]]
        lines += [f"- still failing: {_describe(k, '')}" for k, _ in counts.most_common(3)]
        lines.append("- prefer concrete format rules with an example over general reminders")
        return {"reasoning": f"{len(avoid)} ideas to avoid, {len(helped)} that helped.", "meta_skill": "\n".join(lines)}

    def _stage_meta_reflect(self, p: _Prompt, rng) -> dict[str, Any]:
        rejected = self._step_edits(p, "rejected_steps")
        for _op, target, content, _ in rejected:
            p.avoid.add(norm(content) if content.strip() else "delete:" + norm(target))
        edits: list[dict[str, str]] = []
        # 1. Consolidate: several lines of the teacher's own for one symptom → keep the most concrete one.
        by_symptom: dict[tuple[str, str], list[str]] = {}
        for line in p.lines:
            sym = topic_of_text(line)
            if sym:
                by_symptom.setdefault(sym, []).append(line)
        for _sym, lines in by_symptom.items():
            if len(lines) > 1 and len(edits) < p.budget:
                keep = max(lines, key=_concreteness)
                for line in lines:
                    if line != keep and len(edits) < p.budget:
                        edits.append(_edit("delete", "", line, f"duplicate of '{keep}'"))
        # 2. Directions whose edits were rejected: try a different idea for the same symptom, once.
        tried = {topic_of_text(c) for _, _, c, _ in rejected if c.strip()}
        for sym in sorted(s for s in tried if s):
            if len(edits) >= p.budget:
                break
            ideas = ideas_for(*sym)
            good = [t for t in ideas.good if p.allowed(t)] if ideas else []
            if good and sym not in by_symptom:
                edits.append(_edit("append", rng.choice(good),
                                   rationale=f"a different wording for {_describe(sym, '')}"))
        return {"reasoning": f"{len(rejected)} rejected edits this epoch; consolidated {len(edits)} changes.",
                "edits": edits, "failure_summary": ""}

    # ------------------------------------------------------------------------------------------ whole skills
    def _stage_rewrite(self, p: _Prompt, rng) -> dict[str, Any]:
        skill = p.skill
        for e in tags.find(p.text, "edit"):
            content = e.first("content") or ""
            if content.strip() and (norm(content) in p.avoid or norm(content) in norm(skill)):
                continue  # rejected before, or already said
            skill, _ = apply_edit(skill, e.attrs.get("op", "append"), e.first("target") or "", content)
        return {"reasoning": "Applied the suggestions that were not rejected before.", "skill": skill}

    def _stage_full_rewrite(self, p: _Prompt, rng) -> dict[str, Any]:
        trajectories = tags.find(p.text, "trajectory")
        failures = [t for t in trajectories if _outcome(t) == "failure"]
        p.budget = min(p.budget, 3)
        answer = (self._reflect_failures(p, failures, rng) if failures
                  else self._reflect_successes(p, trajectories, rng))
        skill = p.skill
        for e in answer["edits"]:
            skill, _ = apply_edit(skill, e["op"], e["target"], e["content"])
        return {"reasoning": answer["reasoning"], "skill": skill}

    def _stage_pick(self, p: _Prompt, rng) -> dict[str, Any]:
        candidates = tags.find(p.text, "candidate")
        if not candidates:
            return {"reasoning": "no candidates", "choice": ""}
        scored = [(sum(_concreteness(line) for line in c.body.splitlines() if line.strip())
                   - 3 * len(re.findall(r"explain|reasoning|step by step", c.body, re.I)) + rng.uniform(0, 0.5),
                   c.attrs.get("id", "")) for c in candidates]
        best = max(scored)[1]
        return {"reasoning": "The candidate with the most concrete format rules and the least chatter.",
                "choice": best}


# ---------------------------------------------------------------------------------------------- helpers
def _outcome(t: tags.Block) -> str:
    outcome = t.attrs.get("outcome", "")
    if outcome in ("failure", "success"):
        return outcome
    try:
        return "success" if float(t.attrs.get("hard", "0")) >= 1.0 else "failure"
    except ValueError:
        return "failure"


def _unique(items) -> list:
    """Distinct items in first-seen order (never a set: set order varies between processes, answers must not)."""
    return list(dict.fromkeys(items))


def _favourite(options: list[str], rng) -> str:
    """Like a model's sampling, the first (most obvious) wording is the likeliest: weights 1, 1/2, 1/3, …"""
    return rng.choices(options, [1 / (i + 1) for i in range(len(options))])[0]


def _choose(options: list[str], rng) -> str | None:
    return rng.choice(options) if options else None


def _edit(op: str, content: str = "", target: str = "", rationale: str = "") -> dict[str, str]:
    return {"op": op, "target": target, "content": content, "rationale": rationale}


def _similar(a: set[str], b: set[str]) -> bool:
    if not a and not b:
        return True
    return len(a & b) / max(1, len(a | b)) >= 0.8


def _num(first: Any, second: Any, default: float) -> float:
    for value in (first, second):
        try:
            if value is not None:
                return float(value)
        except (TypeError, ValueError):
            continue
    return default


def _concreteness(line: str) -> float:
    """How concrete an instruction looks: examples, digits and format tokens count."""
    return (len(re.findall(r"\d", line)) * 0.2 + len(re.findall(r"[|$€£]|YYYY|[A-Z]{2}-\d", line))
            + min(len(line), 120) / 120)


_WHAT = {
    "preamble": "a leading label", "extra_text": "extra text around the record", "separator": "field separator",
    "date": "date format", "weight": "weight unit", "code": "letter case of codes", "decimals": "number of decimals",
    "currency": "currency position", "name": "name order", "fields": "missing fields", "other": "other differences",
}


def _describe(sym: tuple[str, str], example: str) -> str:
    topic, want = sym
    text = f"{_WHAT.get(topic, topic)} (expected: {want.replace('_', ' ')})"
    return f"{text}, e.g. {example!r}" if example else text


def _observed_patterns(output: str) -> set[tuple[str, str]]:
    """What a successful output shows, as (topic, want) pairs, by the same surface shapes diagnose uses."""
    line = next((x.strip() for x in output.splitlines() if x.strip()), "")
    found: set[tuple[str, str]] = set()
    label = re.match(r"^([A-Za-z][A-Za-z ]{0,24}):\s+", line)
    found.add(("preamble", "label" if label else "none"))
    body = line[label.end():] if label else line
    sep, parts = split_fields(body)
    if len(parts) > 1:
        found.add(("separator", {"|": "pipe", ",": "comma", ";": "semicolon"}.get(sep.strip(), "other")))
    for part in parts:
        kind = kind_of(part)
        if kind == "date":
            found.add(("date", "iso" if re.fullmatch(r"\d{4}-\d{2}-\d{2}", part) else "as_written"))
        elif kind == "weight":
            found.add(("weight", "kg" if part.lower().endswith("kg") else "lb"))
        elif kind == "code":
            found.add(("code", "upper" if part.isupper() else "lower"))
        elif kind == "price":
            found.add(("currency", "symbol_first" if part[:1] in "$€£" else "code_after"))
        elif kind == "name":
            found.add(("name", "last_first" if "," in part else "first_last"))
    return found


def _causes(p: _Prompt, ideas: Any, sym: tuple[str, str], own: set[str], taken: set[str]) -> list[str]:
    """The skill's lines that look like the cause of symptom `sym` (not the teacher's own, not already edited)."""
    negation_ok = sym[1] in ("as_written", "label", "lb", "lower", "first_last", "code_after", "comma")
    return [line for line in p.lines
            if norm(line) not in own and norm(line) not in taken
            and any(re.search(c, line, re.I) for c in ideas.causes)
            and (negation_ok or not _NEGATED.search(line))]


def _fix_cause(p: _Prompt, causes: list[str], good: list[str], taken: set[str], why: str,
               rng) -> dict[str, str] | None:
    """Rewrite a cause with a good idea, or delete it; None when it may not be deleted and no good idea is left."""
    cause = rng.choice(causes)
    deletable = "delete:" + norm(cause) not in p.avoid
    if good and (not deletable or rng.random() < 0.5):
        idea = _favourite(good, rng)
        taken.update({norm(cause), norm(idea)})
        return _edit("replace", idea, cause, f"{why}; this line seems to cause it")
    if deletable:
        taken.add(norm(cause))
        return _edit("delete", "", cause, f"{why}; this line seems to cause it")
    return None


def _placed(p: _Prompt, ideas: Any, idea: str, own: set[str], taken: set[str], why: str, rng) -> dict[str, str]:
    """Where the new line goes: over a stale line of the teacher's own, after a related line, or at the end."""
    # A line of the teacher's own for this symptom is in the skill, yet the symptom persists: sharpen it.
    stale = [line for line in p.lines if norm(line) in own and norm(line) not in taken]
    roll = rng.random()
    if stale and roll < 0.35:
        target = rng.choice(stale)
        taken.add(norm(target))
        return _edit("replace", idea, target, f"{why}; the current wording does not land")
    if p.lines and roll > 0.75:
        related = [line for line in p.lines if any(w in line.lower() for w in ideas.topic_words)]
        target = rng.choice(related or p.lines)
        return _edit("insert_after", idea, target, why)
    return _edit("append", idea, rationale=why)
