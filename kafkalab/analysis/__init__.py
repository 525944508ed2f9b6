"""The run analysis: a Spark job that says what was lost, duplicated, redelivered or reordered, and where.

Use ``analyze(producer_logs, consumer_logs, audit_logs, session=warm)`` with a :class:`WarmSession`
started early; the result is a :class:`Report` (``to_json()``, ``table()``).
"""

from kafkalab.analysis.analyze import analyze
from kafkalab.analysis.report import PartitionRow, Report
from kafkalab.analysis.spark_session import WarmSession

__all__ = ["PartitionRow", "Report", "WarmSession", "analyze"]
