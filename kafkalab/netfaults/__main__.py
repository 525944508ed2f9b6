"""``python -m kafkalab.netfaults --config JSON|@FILE``: the proxy process (started by :class:`NetFaultsProcess`)."""

from __future__ import annotations

import argparse
import sys

from kafkalab.netfaults.config import ProxyConfig
from kafkalab.netfaults.rules import NetFaultsError


def run(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkalab.netfaults", description=__doc__)
    parser.add_argument("--config", required=True, help="the proxy config as JSON, or @FILE holding it")
    args = parser.parse_args(argv)
    from kafkalab.netfaults.server import main

    try:
        main(ProxyConfig.parse(args.config))
    except NetFaultsError as exc:
        print(f"netfaults: {exc}", file=sys.stderr)
        return NetFaultsError.exit_code
    return 0


if __name__ == "__main__":  # the guard matters: tests import every module to check what it imports
    sys.exit(run())
