"""Write each node's config files into the state dir, where instructors can read them."""

from __future__ import annotations

from pathlib import Path

from kafkalab.cluster.spec import KRAFT_DEMO_SETTINGS, ClusterSpec

QUORUM_WATCH_DIR = "quorum-watch"
LOG4J_TEMPLATE = """\
# Written by kafkalab for {name}: everything to {log_dir}/server.log, errors also to stdout.
log4j.rootLogger=INFO, file, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.Threshold=ERROR
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File={log_dir}/server.log
log4j.appender.file.Append=true
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.apache.zookeeper=INFO
log4j.logger.kafka=INFO
log4j.logger.org.apache.kafka=INFO
log4j.logger.kafka.request.logger=WARN
log4j.logger.kafka.network.RequestChannel$=WARN
log4j.logger.kafka.log.LogCleaner=INFO
log4j.logger.state.change.logger=INFO
log4j.logger.kafka.authorizer.logger=WARN
"""


def render_properties(settings: dict[str, str], title: str, why: dict[str, str] | None = None) -> str:
    """Properties text; a key in ``why`` gets its reason as a comment line above it (when its value is ours)."""
    lines = [f"# {title} (written by kafkalab; regenerated on every start)"]
    for key, value in settings.items():
        if why and key in why and KRAFT_DEMO_SETTINGS[key][0] == value:
            lines.append(f"# {why[key]}")
        lines.append(f"{key}={value}")
    return "\n".join(lines) + "\n"


def node_settings(spec: ClusterSpec) -> list[tuple[str, dict[str, str], str]]:
    """(node name, properties, file name) of every node of the spec's mode."""
    brokers = [(f"broker-{b}", spec.broker_settings(b), "server.properties") for b in spec.broker_ids]
    if not spec.kraft:
        return [("zookeeper", spec.zookeeper_settings(), "zookeeper.properties"), *brokers]
    controllers = [(name, spec.controller_settings(cid), "server.properties")
                   for name, cid in spec.dedicated_controllers]
    return [*controllers, *brokers]


def write_node_configs(spec: ClusterSpec) -> dict[str, Path]:
    """Write zookeeper.properties / server.properties and log4j.properties per node; return config paths."""
    paths: dict[str, Path] = {}
    why = {key: reason for key, (_value, reason) in KRAFT_DEMO_SETTINGS.items()} if spec.kraft else None
    nodes = node_settings(spec)
    for name, settings, filename in nodes:
        node_dir = spec.node_dir(name)
        (node_dir / "data").mkdir(parents=True, exist_ok=True)
        (node_dir / "logs").mkdir(parents=True, exist_ok=True)
        config = node_dir / filename
        config.write_text(render_properties(settings, name, why))
        (node_dir / "log4j.properties").write_text(
            LOG4J_TEMPLATE.format(name=name, log_dir=node_dir / "logs")
        )
        paths[name] = config
    if spec.kraft:  # the quorum view's helper JVM logs beside the nodes
        helper_dir = spec.node_dir(QUORUM_WATCH_DIR)
        (helper_dir / "logs").mkdir(parents=True, exist_ok=True)
        (helper_dir / "log4j.properties").write_text(
            LOG4J_TEMPLATE.format(name=QUORUM_WATCH_DIR, log_dir=helper_dir / "logs"))
    return paths
