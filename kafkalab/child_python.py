"""How kafkalab starts a Python process of its own (a client's loop, a helper, the link proxy, a daemon)."""

from __future__ import annotations

import sys


def python_module(module: str) -> list[str]:
    """``python -P -m MODULE`` with this interpreter. ``-P``: the working directory is not put first on the child's
    path, so a ``kafkalab/`` folder there (a checkout of the repository, say) never shadows the kafkalab this
    process runs, which an installed wheel's child would then fail to import (``kafkalab._assets``)."""
    return [sys.executable, "-P", "-m", module]
