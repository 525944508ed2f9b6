"""The lab pane: the lab's instructions (markdown) and its fault timeline, what is done and what is next.

A lab with a ``[fix]`` shows its task first: what may be changed, the attendee's changes, the hints offered
and taken, the best score; an ``[incident]`` shows its ticket (and its fix's task) and question, its cause once
named, its cure once fixed or given up. The walkthrough (the lab's instructions, which name the cause and the
fix) waits until the exercise is fixed or given up.
"""

from __future__ import annotations

import re

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Markdown, Static

from kafkalab.feeds.exercise import minutes
from kafkalab.feeds.frames import ExerciseView, LabView, PlatformRun, TimelineStep

NO_LAB = ("No lab loaded: **g** runs the default workload (a producer and a consumer on the demo topic), **x** "
          "stops it. `kafkalab console LAB` opens a lab, its instructions and fault timeline show here "
          "(`kafkalab labs` lists them).")
WALKTHROUGH_HIDDEN = ("The lab's walkthrough names the cause and the fix: it shows here once you fixed it or gave up "
                      "(G).")


def timeline_text(steps: tuple[TimelineStep, ...]) -> Text:
    if not steps:
        return Text("no scripted faults", style="dim")
    out = Text()
    next_marked = False
    for step in steps:
        if step.done:
            out.append(" ✔ ", style="bold green").append(step.label, style="dim")
        elif not next_marked:
            next_marked = True
            out.append(" ▶ ", style="bold yellow").append(step.label, style="bold")
        else:
            out.append(" · ", style="dim").append(step.label)
        if step.detail:
            out.append(f"  {step.detail}", style="italic dim")
        out.append("\n")
    out.rstrip()
    return out


def title_text(title: str, lab: LabView) -> Group:
    """The lab's title and id, then the platform this run is on (the mode and Kafka version), its words
    wrapping beside their label in a narrow pane."""
    head = Text.assemble((title, "bold"), (f"  ({lab.lab_id})", "dim"))
    if lab.platform is None:
        return Group(head)
    now = Text(lab.platform.name, style="bold cyan")
    if len(lab.platforms) > 1:
        now.append(f"  · {len(lab.platforms) - 1} more at the end of this tab", style="dim")
    grid = Table.grid(padding=(0, 2))
    grid.add_row(Text("THIS RUN", style="bold"), now)
    return Group(head, grid)


def platforms_text(platforms: tuple[PlatformRun, ...]) -> Group:
    """Every platform the lab runs on, each with the command that runs it there, this run's marked; a long
    command wraps under its own start, not back at the pane's edge."""
    grid = Table.grid(padding=(0, 1))
    for p in platforms:
        words = Text(p.name, style="bold" if p.current else "").append("  (this run)" if p.current else "",
                     style="dim")
        words.append(f"\n{p.command}", style="cyan")
        grid.add_row(Text("▶" if p.current else "·", style="bold yellow" if p.current else "dim"), words)
    return Group(Text("RUNS ON", style="bold"), grid)


EMPHASIS = re.compile(r"\*\*?([^*]+)\*\*?|`([^`]+)`")


def inline_markdown(text: str) -> Text:
    """A hint's *emphasis* and `code` as styles, not asterisks and backticks (hints are one-line Markdown)."""
    out, last = Text(), 0
    for m in EMPHASIS.finditer(text):
        out.append(text[last:m.start()]).append(m[1] or m[2], style="italic" if m[1] else "bold")
        last = m.end()
    return out.append(text[last:])


def exercise_text(ex: ExerciseView) -> Text:
    """What the attendee may do, what they did, the hints and the score, under the task."""
    out = Text()
    if ex.check.running:
        out.append(f" {ex.check.text} ", style="bold black on yellow").append(
            "  the grade appears in Results (v) when the runs end; x stops the check\n\n")
    if ex.incident is not None:
        inc = ex.incident
        out.append("QUESTION  ", style="bold").append(inc.question + "\n")
        if inc.revealed:
            out.append("diagnosed: the cause is below\n", style="bold green")
        else:
            out.append("d answers", style="bold").append(f" ({len(inc.choices)} choices")
            out.append(f"; {inc.wrong_answers} wrong so far)" if inc.wrong_answers else ")")
            out.append("\n")
    if ex.fixable:
        out.append("YOU MAY CHANGE  ", style="bold").append(", ".join(ex.allow) + "\n")
        out.append("YOUR CHANGES  ", style="bold")
        if ex.changes:
            out.append(", ".join(ex.changes), style="bold cyan")
        else:
            out.append("none yet: e adds one (producer.acks=all, topic T rf=3, broker NAME=VALUE, action ...)",
                       style="dim")
        out.append("\n")
        out.append("f", style="bold").append(f" checks your fix: {ex.runs} graded runs under the same faults; ")
        out.append("g", style="bold").append(" runs the demonstration with your changes\n")
        out.append("HINTS  ", style="bold")
        offer = ex.next_hint
        if offer is None:
            out.append("none: you gave up, the solution is below" if ex.given_up and ex.hints_total else
                       "none left" if ex.hints_total else "this lab has none", style="dim")
        elif offer.ready:
            out.append(f"hint {offer.number} of {ex.hints_total} is offered: h shows it (costs {offer.cost} points)",
                       style="yellow")
        else:
            out.append(f"next hint in {minutes(offer.ready_in_s)} (costs {offer.cost} points)", style="dim")
        out.append("\n")
        for i, hint in enumerate(ex.hints_taken, start=1):
            out.append(f"  {i}. ", style="bold").append(inline_markdown(hint)).append("\n")
        out.append("BEST SCORE  ", style="bold")
        if ex.fixed:
            out.append(f"{ex.best_score} / 100 · fixed", style="bold green")
        else:
            out.append("not fixed yet", style="dim")
        if ex.given_up:
            out.append(" · given up", style="dim")
        out.append("\n")
        if ex.solution:
            out.append("THE SOLUTION  ", style="bold").append(", ".join(ex.solution), style="bold green")
            out.append("\n")
    out.rstrip()
    return out


def task_markdown(ex: ExerciseView) -> str:
    """An incident's ticket, then a fix's task: what happened, then the goal and its limits (both stay, before
    and after the diagnosis). No heading: at 100x30 every line of the pane counts."""
    parts = [f"**The ticket:** {ex.incident.ticket.strip()}"] if ex.incident is not None else []
    if ex.task:
        parts.append(f"**Your task:** {ex.task.strip()}")
    return "\n\n".join(parts)


def instructions_markdown(lab: LabView) -> str:
    """An incident's cause once named and its cure once solved, then the lab's walkthrough, which names both
    (an exercise's waits until it is solved)."""
    ex = lab.exercise
    parts = []
    if ex is not None and ex.incident is not None:
        parts += [f"## {head}\n\n{text}" for head, text in (("The cause", ex.incident.explanation),
                                                            ("The cure", ex.incident.cure)) if text]
    if ex is None or ex.solved:
        parts.append(lab.instructions)
    return "\n\n".join(parts)


class LabPane(VerticalScroll):
    shown: LabView | None = None  # the lab on screen

    def compose(self) -> ComposeResult:
        yield Static(id="lab-title").set_styles(display="none")  # shown with a lab: no blank lines above NO_LAB
        yield Markdown(id="lab-task").set_styles(display="none")  # a fix's task, an incident's ticket
        yield Static(id="lab-exercise").set_styles(display="none")
        yield Static(id="lab-timeline").set_styles(display="none")
        yield Markdown(NO_LAB, id="lab-instructions")  # the cause once named, then the walkthrough once solved
        yield Static(WALKTHROUGH_HIDDEN, id="lab-walkthrough").set_styles(display="none")
        yield Static(id="lab-platforms").set_styles(display="none")

    def show(self, lab: LabView | None) -> None:
        if lab == self.shown:
            return
        previous, self.shown = self.shown, lab
        if lab is None:
            return
        for part in self.query("#lab-title, #lab-timeline"):
            part.display = True
        ex = lab.exercise
        title = lab.title if ex is None or ex.incident is None else "Incident"
        self.query_one("#lab-title", Static).update(title_text(title, lab))
        platforms = self.query_one("#lab-platforms", Static)
        platforms.display = bool(lab.platforms)
        platforms.update(platforms_text(lab.platforms))
        self.query_one("#lab-timeline", Static).update(timeline_text(lab.steps))
        self.show_exercise(ex, previous.exercise if previous is not None else None)
        self.query_one("#lab-walkthrough").display = ex is not None and not ex.solved
        instructions = self.query_one("#lab-instructions", Markdown)
        text = instructions_markdown(lab)
        instructions.display = bool(text)
        if previous is None or instructions_markdown(previous) != text:
            instructions.update(text)

    def show_exercise(self, ex: ExerciseView | None, previous: ExerciseView | None) -> None:
        task = self.query_one("#lab-task", Markdown)
        facts = self.query_one("#lab-exercise", Static)
        task.display = facts.display = ex is not None
        if ex is None:
            return
        body = task_markdown(ex)
        if previous is None or task_markdown(previous) != body:
            task.update(body)
        facts.update(exercise_text(ex))
