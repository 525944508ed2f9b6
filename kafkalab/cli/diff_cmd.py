"""``kafkalab diff``: classify a run's anomalies from its producer, consumer and audit logs."""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from kafkalab.analysis import analyze
from kafkalab.analysis.job import CLASSES
from kafkalab.analysis.report import Report
from kafkalab.analysis.spark_session import DEFAULT_MASTER, WarmSession
from kafkalab.cli.tables import Column, fitted_tables
from kafkalab.errors import KafkalabError
from kafkalab.logformat import LogFormat
from kafkalab.settings_text import name_values

FAIL_ON_CHOICES = (*CLASSES, "malformed")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "diff", help="what was lost, duplicated, redelivered or reordered (in a partition or a key), per partition "
                     "(Spark)",
        description="Compare a run's producer logs with its consumer logs (and, with --audit, with what the "
                    "brokers hold) and classify every anomaly per partition. Reads kafkalab's CSV logs and the "
                    "course's payload.log.",
    )
    p.add_argument("run_dir", nargs="?", type=Path, default=None, metavar="RUN_DIR",
                   help="a run directory: its producer, consumer and audit logs, kafkalab's (producer*.csv, "
                        "consumer*.csv, audit.csv) and foreign clients' (producer/payload*.log, "
                        "consumer-N/payload*.log); --producer, --consumer, --audit replace its own")
    # logs stay strings: a URI (hdfs://nn/x) must reach Spark as given, not folded by Path
    p.add_argument("--producer", nargs="+", default=None, metavar="LOG",
                   help="producer log(s): paths, or URIs Spark reads (file://, hdfs://, s3a://; globs allowed)")
    p.add_argument("--consumer", nargs="+", default=None, metavar="LOG", help="consumer log(s), as --producer")
    p.add_argument("--audit", nargs="+", default=None, metavar="LOG",
                   help="audit log(s) from `kafkalab audit`: splits lost into lost by brokers / missed by consumers")
    p.add_argument("--format", choices=("auto", *LogFormat), default="auto", dest="log_format",
                   help="the producer and consumer logs' format: kafkalab's CSV, the course's payload.log "
                        "(topic,partition,key,value; records matched by content), or detected from each file "
                        "(default); an audit log is always kafkalab's")
    p.add_argument("--json", type=Path, default=None, metavar="OUT", help="also write the report as JSON ('-': stdout)")
    p.add_argument("--spark-master", default=DEFAULT_MASTER, metavar="URL",
                   help=f"Spark master (default {DEFAULT_MASTER}; e.g. spark://host:7077 for a cluster)")
    p.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a Spark setting for the session (repeatable), e.g. spark.executor.memory=4g")
    p.add_argument("--fail-on", default="", metavar="CLASSES",
                   help="comma-separated classes (e.g. lost,duplicated; or malformed): exit 1 when any is non-zero")
    p.set_defaults(func=cmd_diff)


def parse_fail_on(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in FAIL_ON_CHOICES]
    if unknown:
        raise KafkalabError(f"--fail-on: unknown class {', '.join(unknown)}; choose from {', '.join(FAIL_ON_CHOICES)}")
    return names


def cmd_diff(args: argparse.Namespace) -> int:
    fail_on = parse_fail_on(args.fail_on)
    spark_conf = name_values(args.spark_conf, "--spark-conf", "spark.executor.memory=4g", need_value=True)
    to_stdout = args.json is not None and str(args.json) == "-"
    console = Console(stderr=to_stdout, highlight=False)
    # Spark starts once analyze() has checked the inputs, so bad input fails at once
    warm = WarmSession(args.spark_master, warmup=False, extra_conf=spark_conf)
    producer, consumer, audit = chosen_logs(args)
    log_format = None if args.log_format == "auto" else LogFormat(args.log_format)
    with spark_progress(warm, console):
        report = analyze(producer, consumer, audit, session=warm, log_format=log_format)
    if to_stdout:
        sys.stdout.write(json.dumps(report.to_json(), indent=2) + "\n")
    else:
        report.print(console, report_tables(report, console.width))
        if args.json is not None:
            report.write_json(args.json)
            console.print(f"[dim]report written to {args.json}[/]")
    failing = report.nonzero(fail_on)
    if failing:
        console.print(f"[bold red]failing on: {', '.join(failing)}[/]")
        return 1
    return 0


def chosen_logs(args: argparse.Namespace) -> tuple[list[str], list[str], list[str]]:
    """The producer, consumer and audit logs: those given, else the run directory's."""
    given = (args.producer, args.consumer, args.audit)
    if args.run_dir is None:
        if args.producer is None or args.consumer is None:
            raise KafkalabError("give a run directory (kafkalab diff RUN_DIR) or the logs (--producer LOG... "
                                "--consumer LOG...)")
        return args.producer, args.consumer, args.audit or []
    if not args.run_dir.is_dir():
        raise KafkalabError(f"run directory {args.run_dir} does not exist (or is no directory); give a run's "
                            "directory, e.g. kafkalab-runs/<lab>-<time>, or the logs with --producer and --consumer")
    from kafkalab.analysis.run_logs import run_logs

    found = run_logs(args.run_dir)
    logs = [mine if mine is not None else [str(p) for p in theirs]
            for mine, theirs in zip(given, (found.producer, found.consumer, found.audit), strict=True)]
    for kind, chosen in zip(("producer", "consumer"), logs[:2], strict=True):
        if not chosen:
            raise KafkalabError(f"run directory {args.run_dir} holds no {kind} log ({kind}*.csv, or "
                                f"payload*.log in a {kind}* directory); give it with --{kind}")
    return logs[0], logs[1], logs[2]


def report_tables(report: Report, width: int) -> list[Table]:
    """The report's per-partition table fitted to ``width``: short headings, the topic named once above it, counts
    whole (columns that do not fit go to a second table, the partition repeated)."""
    grid = report.grid()
    columns = [Column(heading, justify="left" if i == 0 else "right", footer=footer)
               for i, (heading, footer) in enumerate(zip(grid.headings, grid.footers, strict=True))]
    return fitted_tables(columns, grid.rows, width, title=grid.title)


@contextmanager
def spark_progress(warm: WarmSession, console: Console, interval: float = 0.25) -> Iterator[None]:
    """While the body runs: "starting Spark", then a bar of the job's Spark tasks done over those known."""
    done = threading.Event()
    progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                        TextColumn("{task.completed}/{task.total} tasks"), TimeElapsedColumn(), TimeRemainingColumn(),
                        console=console, transient=True, disable=not console.is_terminal)
    seen: dict[int, tuple[int, int]] = {}

    def poll() -> None:
        task = progress.add_task("starting Spark", total=None)
        while not warm.ready:
            if done.wait(interval):
                return
        tracker = warm.get().sparkContext.statusTracker()
        progress.update(task, description="analysing")
        while not done.wait(interval):
            for stage_id in tracker.getActiveStageIds():
                info = tracker.getStageInfo(stage_id)
                if info is not None:
                    seen[stage_id] = (info.numCompletedTasks, info.numTasks)
            if seen:
                progress.update(task, completed=sum(c for c, _ in seen.values()),
                                total=sum(t for _, t in seen.values()))

    poller = threading.Thread(target=poll, name="kafkalab-spark-progress", daemon=True)
    with progress:
        poller.start()
        try:
            yield
        finally:
            done.set()
            poller.join()
