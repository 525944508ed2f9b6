"""The lab pane: the lab's instructions (markdown) and its fault timeline, what is done and what is next."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Markdown, Static

from kafkalab.feeds.frames import LabView, TimelineStep

NO_LAB = ("No lab loaded: **g** runs the default workload (a producer and a consumer on the demo topic), **x** "
          "stops it. `kafkalab console LAB` opens a lab, its instructions and fault timeline show here "
          "(`kafkalab labs` lists them).")


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


class LabPane(VerticalScroll):
    shown: LabView | None = None  # the lab on screen

    def compose(self) -> ComposeResult:
        yield Static(id="lab-title").set_styles(display="none")  # shown with a lab: no blank lines above NO_LAB
        yield Static(id="lab-timeline").set_styles(display="none")
        yield Markdown(NO_LAB, id="lab-instructions")

    def show(self, lab: LabView | None) -> None:
        if lab == self.shown:
            return
        previous, self.shown = self.shown, lab
        if lab is None:
            return
        for part in self.query("#lab-title, #lab-timeline"):
            part.display = True
        self.query_one("#lab-title", Static).update(Text.assemble((lab.title, "bold"), (f"  ({lab.lab_id})", "dim")))
        self.query_one("#lab-timeline", Static).update(timeline_text(lab.steps))
        if previous is None or previous.instructions != lab.instructions:
            self.query_one(Markdown).update(lab.instructions)
