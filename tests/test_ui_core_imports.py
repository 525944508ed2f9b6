"""The core never imports Textual: every kafkalab module outside kafkalab.ui, imported in a fresh process."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = r"""
import importlib, json, pkgutil, sys
import kafkalab
names = [m.name for m in pkgutil.walk_packages(kafkalab.__path__, "kafkalab.")
         if not m.name.startswith("kafkalab.ui") and m.name != "kafkalab.__main__"]
for name in names:
    importlib.import_module(name)
print(json.dumps({"modules": names, "textual": sorted(m for m in sys.modules if m.split(".")[0] == "textual")}))
"""


def test_core_modules_do_not_import_textual() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert {"kafkalab.admin", "kafkalab.cluster.cluster", "kafkalab.cli.console_cmd"} <= set(result["modules"])
    assert result["textual"] == []
