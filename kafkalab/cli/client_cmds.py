"""produce, consume, send, audit, logs export: the course's workloads from the command line."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from kafkalab.cli.common import add_target_args, client_bootstrap_for
from kafkalab.cli.tables import Column, Fit, print_fitted
from kafkalab.clients.audit import audit_topic
from kafkalab.clients.consumer import Consumer
from kafkalab.clients.control_words import CONTROL_WORDS, send_control
from kafkalab.clients.options import BOOTSTRAP, ConsumerConfig, ProducerConfig, parse_defines, role_options
from kafkalab.clients.producer import Producer
from kafkalab.clients.seed_export import export_seed_format
from kafkalab.clients.stats import ClientEvent, ClientState
from kafkalab.errors import KafkalabError

_PLAIN_EVERY_S = 2.0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("produce", help="send the course's records, logging every delivery outcome")
    _add_client_args(p, "producer")
    p.add_argument("--seed", type=int, default=None, help="seed for the random choice of values")
    p.set_defaults(func=cmd_produce)

    p = sub.add_parser("consume", help="consume as the course's consumer until a quit/crash record or Ctrl-C")
    _add_client_args(p, "consumer")
    p.set_defaults(func=cmd_consume)

    p = sub.add_parser("send", help="send a control record (quit, crash, wait) to the consumers")
    p.add_argument("word", choices=CONTROL_WORDS)
    p.add_argument("--topic", default="test-topic", help="topic (default test-topic)")
    p.add_argument("--all-partitions", action="store_true", help="one record to every partition")
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="bootstrap.server=HOST:PORT")
    add_target_args(p)
    p.set_defaults(func=cmd_send)

    p = sub.add_parser("audit", help="read a topic in full (no group) into audit.csv: what the brokers hold")
    p.add_argument("--topic", required=True)
    p.add_argument("--log-dir", type=Path, default=None, help="the run's directory (default ./kafkalab-logs/RUN)")
    p.add_argument("--run", default="manual", help="run name (default manual)")
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="bootstrap.server=HOST:PORT")
    add_target_args(p)
    p.set_defaults(func=cmd_audit)

    logs = sub.add_parser("logs", help="payload log tools")
    lsub = logs.add_subparsers(dest="logs_command", metavar="ACTION", required=True)
    p = lsub.add_parser("export", help="write the course's producer.log/consumer.log for `diff`")
    p.add_argument("run_dir", nargs="?", type=Path, default=None,
                   help="the run's directory (default ./kafkalab-logs/manual)")
    p.add_argument("--seed-format", type=Path, required=True, metavar="DIR", help="where to write the two files")
    p.set_defaults(func=cmd_logs_export)


def _add_client_args(p: argparse.ArgumentParser, role: str) -> None:
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VALUE",
                   help=f"a course option ({role}.*, bootstrap.server); repeat as needed")
    p.add_argument("--log-dir", type=Path, default=None, help="the run's directory (default ./kafkalab-logs/RUN)")
    p.add_argument("--run", default="manual", help="run name, part of every message id (default manual)")
    p.add_argument("--options", action="store_true", help="list the options with their defaults and exit")
    add_target_args(p)


def _log_dir(args: argparse.Namespace) -> Path:
    return Path(args.log_dir) if args.log_dir else Path.cwd() / "kafkalab-logs" / args.run


def _bootstrap(args: argparse.Namespace, settings: dict[str, str], *, proxied: bool = True) -> str:
    """-D bootstrap.server (the course's option) or --bootstrap, else the cluster --state-dir names or the one
    kafkalab cluster running here; never a default address, which may be someone else's cluster. ``proxied``: see
    :func:`client_bootstrap_for`."""
    if BOOTSTRAP in settings:
        if args.bootstrap is not None:
            raise KafkalabError(f"--bootstrap {args.bootstrap} and -D {BOOTSTRAP}={settings[BOOTSTRAP]} both name "
                                "the brokers: give one")
        return settings[BOOTSTRAP]
    return client_bootstrap_for(args, proxied=proxied)


def _bootstrap_default(args: argparse.Namespace) -> str:
    """What the command would use for the brokers if given none: never the course's fixed address."""
    try:
        return client_bootstrap_for(args)
    except KafkalabError:
        return "the kafkalab cluster running here (none now)"


def _print_options(role: str, args: argparse.Namespace) -> int:
    """kafkalab's name of each option with Kafka's below it, whole at any width: the meaning wraps instead."""
    defaults = {BOOTSTRAP: _bootstrap_default(args)}
    rows = [(escape(o.name) + (f"\n  [dim]{escape(o.kafka)}[/]" if o.kafka else ""),
             # a list default one item a line: the broker list would widen the table past 80 columns
             escape(defaults.get(o.name, o.default) or "-").replace(",", ",\n"), escape(o.help))
            for o in role_options(role)]
    console = Console()
    console.print(f"[bold]{role} options[/] (-D name=value): kafkalab's name, Kafka's below it; either works, "
                  f"Kafka's alone or as {role}.NAME", highlight=False)
    print_fitted(console, [Column("option"), Column("default"), Column("meaning", Fit.WRAP)], rows)
    return 0


def _event_printer(console: Console) -> Callable[[ClientEvent], None]:
    """Prints timeline events; a failure before the client started is left to the final error line."""
    started = False

    def show(event: ClientEvent) -> None:
        nonlocal started
        if event.kind == "started":
            started = True
        if event.kind in ("started", "finished") or (event.kind == "error" and not started):
            return
        parts = f" {list(event.partitions)}" if event.partitions else ""
        console.print(f"{time.strftime('%H:%M:%S', time.localtime(event.ts))} {event.client}: "
                      f"{event.kind}{parts} {event.detail}", highlight=False, markup=False)

    return show


def _watch(running: Callable[[], bool], show: Callable[[], None], every: float) -> None:
    while running():
        show()
        time.sleep(every)


def cmd_produce(args: argparse.Namespace) -> int:
    if args.options:
        return _print_options("producer", args)
    settings = parse_defines(args.defines)
    console = Console(highlight=False, soft_wrap=True)
    log_dir = _log_dir(args)
    config = ProducerConfig.from_settings(settings)  # a bad option is said before the cluster is looked for
    producer = Producer(config, log_dir, args.run, _bootstrap(args, settings),
                        on_event=_event_printer(console), seed=args.seed)
    producer.start()
    try:
        if console.is_terminal:
            with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                          TextColumn("{task.fields[detail]}"), TimeRemainingColumn(), console=console,
                          transient=True) as bar:
                task = bar.add_task(producer.name, total=producer.config.total, detail="")

                def update() -> None:
                    s = producer.stats()
                    bar.update(task, completed=s.acked + s.failed_total + s.unknown,
                               detail=f"{s.state} {s.rate:,.0f} msg/s, {s.failed_total} failed, "
                                      f"{s.in_flight} in flight")

                _watch(lambda: producer.running, update, 0.2)
        else:
            def line() -> None:
                s = producer.stats()
                if s.state != ClientState.STARTING:
                    print(f"{producer.name}: {s.acked}/{s.total} acked, {s.failed_total} failed, "
                          f"{s.in_flight} in flight, {s.rate:,.0f} msg/s ({s.state})", flush=True)

            _watch(lambda: producer.running, line, _PLAIN_EVERY_S)
        producer.join()
    except KeyboardInterrupt:
        producer.stop(drain=False)
        producer.join()
    s = producer.stats()
    if s.state == ClientState.FAILED:
        raise KafkalabError(s.error or "the producer failed")
    failed = ", ".join(f"{n} {e}" for e, n in sorted(s.failed.items())) or "none failed"
    console.print(f"{producer.name}: {s.acked} acked, {failed}, {s.unknown} unknown")
    console.print(f"payload log: {s.log_path}")
    return 0


def cmd_consume(args: argparse.Namespace) -> int:
    if args.options:
        return _print_options("consumer", args)
    settings = parse_defines(args.defines)
    console = Console(highlight=False, soft_wrap=True)
    config = ConsumerConfig.from_settings(settings)  # a bad option is said before the cluster is looked for
    consumer = Consumer(config, _log_dir(args), _bootstrap(args, settings), on_event=_event_printer(console))
    consumer.start()

    def counters() -> str:
        s = consumer.stats()
        return (f"{consumer.name}: {s.processed} processed, {s.received} received, lag {s.total_lag}, "
                f"{s.rate:,.0f} msg/s, partitions {list(s.assignment)} ({s.group_state})")

    try:
        if console.is_terminal:
            with console.status(counters()) as status:
                _watch(lambda: consumer.running, lambda: status.update(counters()), 0.25)
        else:
            def line() -> None:
                if consumer.stats().state != ClientState.STARTING:
                    print(counters(), flush=True)

            _watch(lambda: consumer.running, line, _PLAIN_EVERY_S)
        consumer.join()
    except KeyboardInterrupt:
        consumer.stop()
        consumer.join()
    s = consumer.stats()
    if s.state == ClientState.FAILED:
        raise KafkalabError(s.error or "the consumer failed")
    console.print(f"{consumer.name}: {s.processed} processed ({s.state})")
    console.print(f"payload log: {s.log_path}")
    return 1 if s.state == ClientState.CRASHED else 0


def cmd_send(args: argparse.Namespace) -> int:
    settings = parse_defines(args.defines)
    unknown = set(settings) - {BOOTSTRAP}
    if unknown:
        raise KafkalabError(f"send takes only -D {BOOTSTRAP}=..., not {', '.join(sorted(unknown))}")
    # the brokers' own listeners, as the console's keys send it: a network fault does not keep it from the consumers
    sent = send_control(_bootstrap(args, settings, proxied=False), args.topic, args.word, args.all_partitions)
    print(f"sent {args.word!r} to {args.topic} ({sent} record{'s' if sent != 1 else ''})")
    return 0


def cmd_audit(args: argparse.Namespace) -> int:
    settings = parse_defines(args.defines)
    console = Console(highlight=False, soft_wrap=True)
    log_dir = _log_dir(args)
    bootstrap = _bootstrap(args, settings, proxied=False)  # what the brokers hold, as a lab's audit reads it
    if console.is_terminal:
        with Progress(TextColumn("audit"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                      console=console, transient=True) as bar:
            task = bar.add_task("audit", total=None)
            path, count = audit_topic(bootstrap, args.topic, log_dir,
                                      progress=lambda done, total: bar.update(task, completed=done, total=total))
    else:
        path, count = audit_topic(bootstrap, args.topic, log_dir)
    console.print(f"{count} records of {args.topic} in {path}")
    return 0


def cmd_logs_export(args: argparse.Namespace) -> int:
    run_dir = args.run_dir or Path.cwd() / "kafkalab-logs" / "manual"
    if not Path(run_dir).is_dir():
        raise KafkalabError(f"{run_dir} is not a directory: give the run's log directory")
    prod, cons, n_prod, n_cons = export_seed_format(Path(run_dir), args.seed_format)
    print(f"{prod} ({n_prod} lines), {cons} ({n_cons} lines): diff {prod} {cons}")
    return 0
