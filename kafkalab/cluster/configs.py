"""Write each node's config files into the state dir, where instructors can read them."""

from __future__ import annotations

from pathlib import Path

from kafkalab.cluster.spec import ClusterSpec

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


def render_properties(settings: dict[str, str], title: str) -> str:
    lines = [f"# {title} (written by kafkalab; regenerated on every start)"]
    lines += [f"{key}={value}" for key, value in settings.items()]
    return "\n".join(lines) + "\n"


def write_node_configs(spec: ClusterSpec) -> dict[str, Path]:
    """Write zookeeper.properties / server.properties and log4j.properties per node; return config paths."""
    paths: dict[str, Path] = {}
    nodes: list[tuple[str, dict[str, str], str]] = [
        ("zookeeper", spec.zookeeper_settings(), "zookeeper.properties"),
        *[(f"broker-{b}", spec.broker_settings(b), "server.properties") for b in spec.broker_ids],
    ]
    for name, settings, filename in nodes:
        node_dir = spec.node_dir(name)
        (node_dir / "data").mkdir(parents=True, exist_ok=True)
        (node_dir / "logs").mkdir(parents=True, exist_ok=True)
        config = node_dir / filename
        config.write_text(render_properties(settings, name))
        (node_dir / "log4j.properties").write_text(
            LOG4J_TEMPLATE.format(name=name, log_dir=node_dir / "logs")
        )
        paths[name] = config
    return paths
