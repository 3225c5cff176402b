"""Rendering loop events on stderr: a live progress line while a run works, one line per decided step, and the
final seed / best / final table. On a non-terminal stderr (CI, pipes) only the step lines and the table appear."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from skillgit.loop import events as ev
from skillgit.loop.events import Event
from skillgit.textsafe import shown


class RunDisplay:
    def __init__(self, console: Console):
        self.console = console
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(bar_width=24), MofNCompleteColumn(),
                                 TextColumn("{task.fields[info]}"), TimeElapsedColumn(), console=console,
                                 transient=True, disable=not console.is_terminal)
        self.task: TaskID | None = None
        self.total_steps = 0
        self.step = ""
        self.stage = ""
        self.accepted = 0
        self.rejected = 0
        self.val: float | None = None
        self.tokens: int | None = None  # known at each decided step (the loop's usage total); shown from then on

    def __enter__(self) -> "RunDisplay":
        self.progress.__enter__()
        self.task = self.progress.add_task("starting", total=None, info="")
        return self

    def __exit__(self, *exc) -> None:
        self.progress.__exit__(*exc)

    def _info(self) -> str:
        val = "-" if self.val is None else f"{self.val:.3f}"
        tokens = f" · {self.tokens / 1000:.1f}k tok" if self.tokens else ""  # never a made-up 0.0k mid-stage
        return f"val {val} · ✓{self.accepted} ✗{self.rejected}{tokens}"

    def _refresh(self, done: int | None = None, total: int | None = None) -> None:
        if self.task is None:
            return
        desc = f"step {self.step}/{self.total_steps} {self.stage}" if self.total_steps else self.stage
        self.progress.update(self.task, description=desc, info=self._info(), completed=done or 0, total=total)

    def progress_callback(self, label: str):
        def report(done: int, total: int) -> None:
            self.stage = label
            self._refresh(done, total)
        return report

    def handle(self, event: Event) -> None:
        if isinstance(event, ev.RunStarted):
            self.total_steps = event.total_steps
            self.val = event.current_score
            word = "resuming" if event.resumed else "starting"
            self.console.print(f"{word} run {event.run}: {self.total_steps} steps; seed val {event.seed_score:.3f}")
        elif isinstance(event, ev.StepStarted):
            self.step = event.step
        elif isinstance(event, ev.StageStarted):
            self.stage = event.stage
            self._refresh()
        elif isinstance(event, ev.Progress):
            self.stage = event.stage
            self._refresh(event.done, event.total)
        elif isinstance(event, ev.Heartbeat):
            self.stage = f"{event.stage} (waiting {event.elapsed_s:.0f}s on {event.in_flight} call(s))"
            self._refresh()
        elif isinstance(event, ev.StepDecided):
            o = event.outcome
            if o.accepted:
                self.accepted += 1
                self.val = o.score_after
            else:
                self.rejected += 1
            usage = event.usage_total
            self.tokens = usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)
            mark = "[green]accepted[/]" if o.accepted else "[red]rejected[/]"
            self.console.print(f"step {o.step:>4} {mark} val {o.score_before:.3f} → {o.score_after:.3f} "
                               f"({o.delta * 100:+.1f}) · {len(o.edits)} edit(s) · {escape(shown(o.reason))}",
                               highlight=False)
            self._refresh()
        elif isinstance(event, ev.EpochEnding):
            self.console.print(f"epoch {event.epoch}: slow update / meta skill / meta reflect")
        elif isinstance(event, ev.EpochEnded):
            self.console.print(f"epoch {event.epoch} done")
        elif isinstance(event, ev.Warning):
            self.console.print(f"[yellow]warning:[/] {escape(shown(event.message))}")


def scores_table(scores: dict, metric: str) -> Table:
    table = Table(title=f"skill scores ({metric})")
    table.add_column("skill")
    table.add_column("val", justify="right")
    table.add_column("test", justify="right")
    table.add_column("rev")
    for name in ("seed", "best", "final"):
        row = scores.get(name) or {}
        fmt = lambda v: "-" if v is None else f"{v:.3f}"  # noqa: E731
        table.add_row(name, fmt(row.get("val")), fmt(row.get("test")), str(row.get("rev", ""))[:10])
    return table
