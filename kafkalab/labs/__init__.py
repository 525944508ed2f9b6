"""Labs: lab files, fault timelines, runs (LabRun, one per run, held by a LabSession) and expectations.

The console and the headless runner drive the same :class:`kafkalab.labs.session.LabSession`.
"""

from kafkalab.labs.loader import catalog, find_lab, load_lab
from kafkalab.labs.model import Lab
from kafkalab.labs.run import LabRun
from kafkalab.labs.session import LabSession, Phase, RunResult, SessionEvent, SessionState

__all__ = ["Lab", "LabRun", "LabSession", "Phase", "RunResult", "SessionEvent", "SessionState", "catalog",
           "find_lab", "load_lab"]
