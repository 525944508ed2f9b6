"""Markdown tables rendered from benchmarks/results/*.json: one small renderer per benchmark family.

A file's family is read from its name (``labs-kraft.json`` is a labs file). A file no renderer knows, or
one whose shape a renderer cannot read, is reported as a problem; the hook logs it as a warning, which
``mkdocs build --strict`` turns into a failed build.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

Json = Mapping[str, Any]
Renderer = Callable[[str, Json], list[str]]


# ---- formatting -----------------------------------------------------------------------------------
def num(x: float) -> str:
    """A measurement with two to three significant digits: 0.081, 3.64, 8.7, 18.8, 522."""
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    if abs(x) >= 1:
        text = f"{x:.2f}"
        return text[:-1] if text.endswith("0") else text
    return f"{x:.3f}".rstrip("0").rstrip(".") if x else "0"


def bound(x: float) -> str:
    """A goal as written: 15, 1,536, 3, 0.5."""
    return f"{x:,g}"


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def unit(key: str) -> str:
    for suffix, name in (("_ms", " ms"), ("_s", " s"), ("_mb", " MB"), ("_percent", " %")):
        if key.endswith(suffix):
            return name
    return ""


def is_stat(value: Any) -> bool:
    return isinstance(value, Mapping) and "median" in value


def stat(value: Json, suffix: str = "", runs: bool = False) -> str:
    """``median (min–max)``, the runs counted when asked."""
    text = f"{num(value['median'])}{suffix}"
    if "min" in value and "max" in value and value["min"] != value["max"]:
        text += f" ({num(value['min'])}–{num(value['max'])})"
    if runs and "runs" in value:
        text += f", {value['runs']} run{'s' if value['runs'] != 1 else ''}"
    return text


def span(values: Iterable[float], suffix: str = "") -> str:
    vals = sorted(values)
    if not vals:
        return "—"
    if vals[0] == vals[-1]:
        return f"{num(vals[0])}{suffix}"
    return f"{num(vals[0])}–{num(vals[-1])}{suffix}"


def cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def table(header: list[str], rows: Iterable[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return [*out, ""]


def met(value: float, goal: Any) -> str:
    """``met`` / ``**missed**`` for a goal given as a number (an upper bound) or as ``"<= 1.0"``."""
    m = re.fullmatch(r"\s*(<=|>=|<|>)?\s*([0-9.]+)\s*", str(goal))
    if not m:
        return ""
    bound = float(m[2])
    ok = {"<=": value <= bound, ">=": value >= bound, "<": value < bound, ">": value > bound}[m[1] or "<="]
    return "met" if ok else "**missed**"


def source_line(name: str, data: Json, extra: str = "") -> list[str]:
    """The italic line under a table: which file, when, on what machine."""
    bits = [f"`benchmarks/results/{name}.json`"]
    if when := data.get("when"):
        bits.append(f"written {str(when)[:10]}")
    machine = data.get("machine", {})
    if "cpus" in machine:
        bits.append(f"{machine['cpus']} CPUs" + (f", {machine['memory_gb']} GB" if "memory_gb" in machine else ""))
    if extra:
        bits.append(extra)
    return [f"*From {'; '.join(bits)}.*", ""]


def load_text(values: Any) -> str:
    if isinstance(values, list) and values:
        return "load average " + " / ".join(f"{v:.1f}" for v in values)
    return ""


# ---- labs*.json -----------------------------------------------------------------------------------
def _failure(failure: Any) -> str:
    """One failed run: what did not hold, without the faults that only waited on an earlier one."""
    items = failure if isinstance(failure, list) else [failure]
    return "; ".join(str(x) for x in items if "an earlier fault never fired" not in str(x))


def render_labs(name: str, data: Json) -> list[str]:
    """labs -> {runs, lesson_shown, median_s, worst_s, under_goal, failures}: how often each lesson showed."""
    labs: Json = data["labs"]
    goal = data.get("goal_s")
    failures = any(lab.get("failures") for lab in labs.values())
    commits = any(lab.get("commits") for lab in labs.values())
    header = ["lab", "lesson shown", "median", "worst", f"under {bound(goal)} s" if goal else "under goal"]
    if commits:
        header.append("code")
    if failures:
        header.append("what did not hold in the failed runs")
    rows = []
    for lab_id, lab in labs.items():
        shown = f"{lab['lesson_shown']} of {lab['runs']}"
        row = [lab_id, f"**{shown}**" if lab["lesson_shown"] == lab["runs"] else shown,
               f"{num(lab['median_s'])} s", f"{num(lab['worst_s'])} s", "yes" if lab["under_goal"] else "**no**"]
        if commits:  # the commits the runs ran on (a catalog gathered over several sittings)
            row.append(", ".join(f"`{c}`" for c in lab.get("commits", [])) or "not recorded")
        if failures:
            row.append(" / ".join(_failure(f) for f in lab.get("failures", [])))
        rows.append(row)
    runs = sum(lab["runs"] for lab in labs.values())
    shown = sum(lab["lesson_shown"] for lab in labs.values())
    extra = f"{plural(len(labs), 'lab')}, **{runs} runs, {shown} lessons shown**"
    return table(header, rows) + source_line(name, data, extra)


PLATFORMS = (("zookeeper", "3.9.2", "ZooKeeper 3.9.2"), ("kraft", "3.9.2", "KRaft 3.9.2"),
             ("kraft", "4.4.0", "KRaft 4.4.0"))


def render_platforms(name: str, data: Json) -> list[str]:
    """labs-platforms: every lesson on the platforms measured, one column per platform. An entry of no runs is
    declared and "to run"; a cell with no entry is "not run" (not measured in this file), or "—" in a file of
    every declared platform (``every_declared_platform``: the lab does not run there)."""
    cells: dict[str, dict[tuple[str, str], str]] = {}
    failed: list[str] = []
    measured = [lab for lab in data["labs"].values() if lab["runs"]]
    for key, lab in data["labs"].items():
        shown = f"{lab['lesson_shown']} of {lab['runs']}"
        shown = f"**{shown}**" if lab["lesson_shown"] == lab["runs"] else shown
        cell = f"{shown}, {num(lab['median_s'])} s" if lab["runs"] else "to run"
        cells.setdefault(lab["lab_id"], {})[(lab["mode"], lab["kafka_version"])] = cell
        failed += [f"`{key}`: {_failure(f)}" for f in lab.get("failures", [])]
    absent = "—" if data.get("every_declared_platform") else "not run"
    rows = [[lab_id, *(by.get((mode, version), absent) for mode, version, _ in PLATFORMS)]
            for lab_id, by in cells.items()]
    runs = sum(lab["runs"] for lab in measured)
    shown_total = sum(lab["lesson_shown"] for lab in measured)
    out = table(["lesson", *(title for _, _, title in PLATFORMS)], rows)
    out += [""] + [f"- failed: {f}" for f in failed] if failed else []
    extra = f"{plural(len(cells), 'lesson')}, **{runs} runs, {shown_total} shown**; each cell: lesson shown, median run"
    if data.get("every_declared_platform"):
        full = sum(1 for lab in measured if lab["runs"] >= 10 and lab["lesson_shown"] == lab["runs"])
        extra += (f"; **{full} of {len(data['labs'])} lesson-platform pairs 10 of 10**, "
                  f"{len(data['labs']) - len(measured)} to run; — : not a platform the lab declares")
    return out + source_line(name, data, extra)


# ---- cluster.json ---------------------------------------------------------------------------------
CLUSTER_LABELS = {
    "cold_start_s": "cold start to ready (ZooKeeper + 3 brokers, RF=3 topic with all leaders)",
    "sigkill_failover_s": "SIGKILL of a leader until the admin API shows a new leader",
    "sigkill_failover_kafka_defaults_s": "the same with Kafka's default settings",
    "sigterm_failover_s": "SIGTERM of a leader until its partitions have new leaders",
    "idle_rss_mb": "total RSS of the idle cluster",
}


def render_cluster(name: str, data: Json) -> list[str]:
    goals: Json = data.get("goals", {})
    rows = []
    for key, value in data.items():
        if not is_stat(value):
            continue
        goal = goals.get(key)
        note = ""
        if key == "sigkill_failover_kafka_defaults_s" and "sigkill_speedup_vs_kafka_defaults" in data:
            note = f"{num(data['sigkill_speedup_vs_kafka_defaults'])}x slower"
        elif goal is not None:
            note = met(value["median"], goal)
        rows.append([CLUSTER_LABELS.get(key, key), f"<= {bound(goal)}{unit(key)}" if goal is not None else "",
                     f"**{num(value['median'])}{unit(key)}**", span((value["min"], value["max"]), unit(key)),
                     str(value.get("runs", "")), note])
    return table(["measure", "goal", "median", "range", "runs", ""], rows) + source_line(name, data)


# ---- clients.json ---------------------------------------------------------------------------------
def _rate(value: Json) -> str:
    return f"{value['median']:,.0f} msg/s ({value['min'] / 1000:,.1f}k–{value['max'] / 1000:,.1f}k)"


def render_clients(name: str, data: Json) -> list[str]:
    rates: Json = data["msg_per_s"]
    ratio: Json = data["ratio_of_medians"]
    cpu: Json = data["client_cpu_s_per_100k_records"]
    rows = [
        ["producer", _rate(rates["ours_produce"]), _rate(rates["library_produce"]),
         "ProducerPerformance " + _rate(rates["java_produce"]),
         f"{num(ratio['producer_vs_ProducerPerformance'])}x",
         f"{num(ratio['library_producer_vs_ProducerPerformance'])}x"],
        ["consumer", _rate(rates["ours_consume"]), _rate(rates["library_consume"]),
         "ConsumerPerformance " + _rate(rates["java_consume"]),
         f"{num(ratio['consumer_vs_ConsumerPerformance'])}x",
         f"{num(ratio['library_consumer_vs_ConsumerPerformance'])}x"],
        ["CPU s per 100k records, producer / consumer",
         *(f"{num(cpu[f'{who}_produce']['median'])} / {num(cpu[f'{who}_consume']['median'])}"
           for who in ("ours", "library", "java")), "", ""],
    ]
    header = ["", "kafkalab (with payload log)", "confluent-kafka alone", "Kafka tool", "kafkalab / tool",
              "alone / tool"]
    setup = (f"{data['records']:,} records of {data['record_size_bytes']} bytes, {data['partitions']} partitions, "
             f"RF {data['replication_factor']}; {data['producer_settings']}; goal: {data.get('goal', 'none given')}")
    return table(header, rows) + source_line(name, data, setup)


# ---- analysis.json --------------------------------------------------------------------------------
def render_analysis(name: str, data: Json) -> list[str]:
    rows = []
    for r in data["results"]:
        rss = r.get("driver_peak_rss_mb", {})
        rows.append([
            f"{r['produced_records']:,}", stat(r["warm_job_s"], " s"), f"{num(r['cold_job_s']['median'])} s",
            f"{num(r['sort_diff_s']['median'])} s", f"{num(r['warm_vs_sort_diff'])}x",
            f"{num(r['floor_job_s']['median'])} s", f"{num(r['floor_vs_sort_diff'])}x",
            f"{num(rss['warm_session'] / 1024)} GB" if "warm_session" in rss else "",
            "yes" if r.get("correct") else "**no**",
        ])
    header = ["produced records", "warm job (range)", "cold job (new session)", "`LC_ALL=C sort` x2 + `diff`",
              "warm / sort+diff", "floor job", "floor / sort+diff", "driver peak RSS", "counts = injected"]
    out = table(header, rows) + source_line(name, data, load_text(data.get("load_avg_at_end")) + " at the end")
    if notes := data.get("notes"):
        out += ['??? info "What each column measures (the file\'s notes)"', f"    {notes}", ""]
    return out


# ---- analysis-cluster.json ------------------------------------------------------------------------
def render_analysis_cluster(name: str, data: Json) -> list[str]:
    rows = []
    for mode, m in data["modes"].items():
        spark = m.get("spark", {})
        executors = spark.get("executors", 0)
        where = (f"{spark.get('master', mode)} ("
                 + (plural(executors, "executor") if executors else "in the driver")
                 + f", {plural(spark.get('cores', 0), 'core')})")
        vs = ""
        if mode == "standalone" and "standalone_overhead" in data:
            vs = f"{num(data['standalone_overhead'])}x (first job {num(data.get('first_job_overhead', 0))}x)"
        rows.append([f"{data['produced_records']:,}", where, f"{num(m['session_s'])} s", f"{num(m['first_job_s'])} s",
                     stat(m["job_s"], " s", runs=True), vs, "yes" if m.get("correct") else "**no**"])
    header = ["produced records", "mode", "session start", "first job", "timed job", "standalone / local",
              "counts = injected"]
    load = (f"{load_text(data.get('load_avg_at_start'))} at the start, "
            f"{load_text(data.get('load_avg_at_end'))} at the end")
    size = f"{data['input_bytes'] / 1e9:.2f} GB of logs" if "input_bytes" in data else ""
    return table(header, rows) + source_line(name, data, ", ".join(x for x in (size, load) if x))


# ---- analysis-key-order.json ----------------------------------------------------------------------
def render_analysis_key_order(name: str, data: Json) -> list[str]:
    """cases -> {keys shape: wall_s / spark_cpu_s per job (ref, tree), their ratios, classes, same_results}."""
    rows = []
    for keys, c in data["cases"].items():
        cpu, wall = c["spark_cpu_s"], c["wall_s"]
        rows.append([keys, f"{c['classes']['tree'].get('key_reordered', 0):,}",
                     stat(cpu["ref"], " s"), stat(cpu["tree"], " s"), f"{num(c['spark_cpu_ratio'])}x",
                     stat(wall["ref"], " s"), stat(wall["tree"], " s"), f"{num(c['wall_ratio'])}x",
                     "yes" if c["same_results"] and all(c["correct"].values()) else "**no**"])
    header = ["record keys", "key_reordered found", "Spark CPU before", "after", "after / before",
              "wall before", "after", "after / before", "same results, counts = injected"]
    runs = next(iter(data["cases"].values()))["wall_s"]["tree"]["runs"]
    setup = (f"{data['produced_records']:,} generated sends; before: `{data['against']}`; medians of {runs} "
             "alternating runs in one warm session")
    return table(header, rows) + source_line(name, data, setup)


# ---- console.json ---------------------------------------------------------------------------------
def _runs(data: Json, *path: str) -> list[float]:
    values = []
    for run in data.get("runs", []):
        value: Any = run
        for key in path:
            value = value[key]
        values.append(float(value))
    return values


def render_console(name: str, data: Json) -> list[str]:
    m: Json = data["medians_of_runs"]
    runs = data.get("runs", [])
    rows = [
        ["key to visible reaction, idle (median / p95)",
         f"{num(m['key_idle_median_ms'])} / {num(m['key_idle_p95_ms'])} ms",
         "p95 " + span(_runs(data, "key_to_visible_idle", "p95_ms"), " ms")],
        ["key to visible reaction, run live (median / p95)",
         f"{num(m['key_live_median_ms'])} / {num(m['key_live_p95_ms'])} ms",
         "p95 " + span(_runs(data, "key_to_visible_live_run", "p95_ms"), " ms")],
        ["the echo peer, run live (p95)", f"{num(m['peer_live_p95_ms'])} ms",
         span(_runs(data, "peer_key_to_visible_live_run", "p95_ms"), " ms")],
        ["console ready beyond the cluster's own start", f"{num(m['beyond_cluster_s'])} s",
         span(_runs(data, "startup", "beyond_cluster_s"), " s")],
        ["new leader on screen after the admin API shows it", f"{num(m['console_after_admin_s'])} s",
         span(_runs(data, "new_leader", "console_after_admin_s"), " s")
         + f"; within one refresh in {sum(bool(r['new_leader'].get('within_one_refresh')) for r in runs)} "
         f"of {len(runs)}"],
        ["console CPU, idle / run live", f"{num(m['cpu_idle_percent'])} % / {num(m['cpu_live_percent'])} %",
         span(_runs(data, "console_cpu_percent", "idle"), " %") + " / "
         + span(_runs(data, "console_cpu_percent", "live_run"), " %")],
    ]
    loads = _runs(data, "machine", "load_avg_1m_at_start") + _runs(data, "machine", "load_avg_1m")
    records = {r.get("records") for r in runs}
    extra = f"{len(runs)} runs of {', '.join(f'{x:,}' for x in records if x)} records, load average {span(loads)}"
    return table(["measure", f"median of {len(runs)} runs", "range over the runs"], rows) + source_line(
        name, data, extra)


# ---- docker.json ----------------------------------------------------------------------------------
DOCKER_SETUPS = {
    "local": "ZooKeeper + 3 brokers, local",
    "docker": "ZooKeeper, docker",
    "local-kraft": "KRaft (3 controllers + 3 brokers), local",
    "docker-kraft": "KRaft, docker",
}
DOCKER_ROWS = {
    "cold_start_s": "cold start to ready (+ topic created; KRaft: formatting included)",
    "sigkill_failover_s": "SIGKILL of a leader -> new leader",
    "load_1m": "load average (1 min) during the runs",
}


def render_docker(name: str, data: Json) -> list[str]:
    setups = {k: v for k, v in data.items() if isinstance(v, Mapping) and "cold_start_s" in v}
    rows = []
    for key, label in DOCKER_ROWS.items():
        rows.append([label, *(stat(s[key], unit(key), runs=True) if key in s else "—" for s in setups.values())])
    rows.append(["failed runs", *("; ".join(s.get("failures", [])) or "none" for s in setups.values())])
    header = ["same run, median (range)", *(DOCKER_SETUPS.get(k, k) for k in setups)]
    image = data.get("image_preparation", {})
    extra = ", ".join(x for x in (
        f"image `{image['image']}` {image.get('how', 'prepared')} in {num(image['seconds'])} s" if image else "",
        f"Docker engine {data['engine']}" if "engine" in data else "") if x)
    return table(header, rows) + source_line(name, data, extra)


# ---- modes*.json ----------------------------------------------------------------------------------
MODE_SETUPS = {
    "zookeeper": "ZooKeeper",
    "kraft_1": "KRaft, 1 controller",
    "kraft": "KRaft, 3 controllers",
    "kraft_combined": "KRaft, 3 combined",
}
MODE_ROWS = {
    "cold_start_s": "cold start to ready (+ topic created)",
    "format_s": "of which storage formatting",
    "start_cpu_s": "CPU time of the start (all JVMs)",
    "start_cpu_floor_s": "that CPU time over the cores: the floor",
    "sigkill_failover_s": "SIGKILL of a leader -> new leader",
    "sigterm_failover_s": "SIGTERM of a leader -> leaderships moved",
    "controller_failover_s": "controller killed -> another in charge",
    "idle_rss_mb": "idle RSS of the nodes",
    "quorum_helper_rss_mb": "the quorum view's helper JVM",
}
MODE_GOALS = {
    "kraft_ready_vs_zookeeper": "KRaft (3 controllers) ready / ZooKeeper ready",
    "kraft_1_ready_vs_zookeeper": "KRaft (1 controller) ready / ZooKeeper ready",
    "kraft_combined_ready_vs_zookeeper": "KRaft (combined) ready / ZooKeeper ready",
    "kraft_sigkill_failover_s": "KRaft (3 controllers): SIGKILL of a leader -> new leader",
    "kraft_idle_rss_mb": "KRaft (3 controllers): idle RSS of the nodes",
}


def render_modes(name: str, data: Json) -> list[str]:
    setups = {k: v for k, v in data.items() if isinstance(v, Mapping) and "cold_start_s" in v}
    keys = [k for k in MODE_ROWS if any(k in s for s in setups.values())]
    keys += sorted({k for s in setups.values() for k, v in s.items() if is_stat(v)} - set(keys))
    rows = [[MODE_ROWS.get(k, k), *(stat(s[k], unit(k)) if k in s else "—" for s in setups.values())] for k in keys]
    out = table(["median (range)", *(MODE_SETUPS.get(k, k) for k in setups)], rows)
    goals: Json = data.get("goals", {})
    if goals:
        goal_rows = [[MODE_GOALS.get(k, k), f"{num(data[k])}{unit(k) or 'x'}" if k in data else "—",
                      f"{goal}{unit(k)}" if isinstance(goal, str) else f"<= {bound(goal)}{unit(k)}",
                      met(data[k], goal) if k in data else ""] for k, goal in goals.items()]
        out += table(["goal", "measured", "wanted", ""], goal_rows)
    if failures := data.get("failures"):
        out += ["Failed rounds: " + "; ".join(f"`{cell(f)}`" for f in failures), ""]
    load = data.get("load_average_1min")
    extra = "; ".join(x for x in (f"load average {stat(load)}" if is_stat(load) else "", data.get("note", "")) if x)
    return out + source_line(name, data, extra)


# ---- report_latency*.json -------------------------------------------------------------------------
def _records(size: str) -> str:
    m = re.fullmatch(r"(\d+)k", size)
    return f"{int(m[1]) * 1000:,}" if m else size


def _median(values: list[float]) -> float:
    vals = sorted(values)
    mid = len(vals) // 2
    return vals[mid] if len(vals) % 2 else (vals[mid - 1] + vals[mid]) / 2


def render_report_latency(name: str, data: Json) -> list[str]:
    entries: list[tuple[str, str, Json]] = []
    for key, value in data.items():
        if key == "console" and isinstance(value, Mapping):
            entries += [("console", size, e) for size, e in value.items()]
        elif key.startswith("cli_") and isinstance(value, Mapping):
            entries.append(("`kafkalab run`", key.removeprefix("cli_"), value))
    if not entries:
        raise KeyError("no console or cli_* entries")
    rows = []
    for where, size, e in entries:
        samples = ", ".join(num(s) for s in e.get("samples", []))
        if whole := e.get("whole_command_s"):
            samples += f" (whole command {stat(whole, ' s')})"
        split = e.get("split", [])
        parts = [k for k in ("audit_s", "analysis_s", "teardown_s", "to_screen_s") if split and k in split[0]]
        went = " / ".join(f"{k.removesuffix('_s').replace('_', ' ')} {num(_median([s[k] for s in split]))}"
                          for k in parts)
        rows.append([where, _records(size), f"**{num(e['median'])} s**", samples,
                     f"<= {bound(e['goal_s'])} s" if "goal_s" in e else "", "met" if e.get("met") else "**missed**",
                     went + " s" if went else ""])
    header = ["where", "records", "median drain -> verdict", "runs (s)", "goal", "", "median split: seconds"]
    load = ", ".join(x for x in (load_text(data.get("load_average_before")) + " before" if data.get(
        "load_average_before") else "", load_text(data.get("load_average_after")) + " after" if data.get(
        "load_average_after") else "") if x)
    return table(header, rows) + source_line(name, data, load)


# ---- fix*.json ------------------------------------------------------------------------------------
def render_fix(name: str, data: Json) -> list[str]:
    """labs -> attempts (shipped / solution / wrong N) -> {changes, wants, gradings, as_wanted, median_run_s,
    failing_rows, not_graded}: whether each fix exercise grades the way it must, both ways."""
    rows = []
    gradings = as_wanted = 0
    for lab_id, lab in data["labs"].items():
        own = lab.get("lab_median_s")
        for key, a in lab["attempts"].items():
            gradings += a["gradings"]
            as_wanted += a["as_wanted"]
            ok = f"{a['as_wanted']} of {a['gradings']}"
            ok = f"**{ok}**" if a["as_wanted"] == a["gradings"] else ok
            if early := a.get("not_graded"):  # a run ended early: no verdict on the fix, graded again
                ok += f" (+{len(early)} not graded: {early[0]})"
            seen: list[str] = next((r for r in a.get("failing_rows", []) if r), [])
            rows.append([lab_id, key, ", ".join(f"`{c}`" for c in a["changes"]) or "(none)", a["wants"], ok,
                         f"{num(a['median_run_s'])} s" if a.get("median_run_s") is not None else "—",
                         f"{num(own)} s" if own is not None else "—", "; ".join(seen) or "—"])
    header = ["lab", "attempt", "changes", "must grade", "graded so", "median graded run", "lab's own run",
              "rows that did not hold"]
    extra = f"{plural(len(data['labs']), 'lab')}, {lab_runs(data)}**{as_wanted} of {gradings} gradings as wanted**"
    return table(header, rows) + source_line(name, data, extra)


def render_fix_speed(name: str, data: Json) -> list[str]:
    """labs -> {first_run_s, own_run_s, check_s, graded_runs, per_run_s, within_own_run_plus_15s, solution_passed,
    problem}: a graded check in the console on the kept cluster, per graded run, against the lab's own run."""
    over = data["goal_over_own_run_s"]
    rows = []
    for lab_id, lab in data["labs"].items():
        within = lab["within_own_run_plus_15s"]
        rows.append([lab_id, f"{num(lab['first_run_s'])} s" if lab["first_run_s"] is not None else "—",
                     f"{num(lab['own_run_s'])} s" if lab["own_run_s"] is not None else "—",
                     f"{num(lab['fixed_run_s'])} s" if lab.get("fixed_run_s") is not None else "—",
                     f"{num(lab['per_run_s'])} s" if lab["per_run_s"] is not None else "—",
                     "yes" if within else "—" if within is None else "**no**",
                     {True: "PASS", False: "**FAIL**", None: "—"}[lab["solution_passed"]],
                     lab["problem"] or "; ".join(lab["fresh_cluster_notes"]) or "—"])
    header = ["lab", "first g (cluster start)", "own run (g, kept cluster)", "g with the fix",
              "check per graded run (f to card)",
              f"<= own run + {bound(over)} s", "solution graded", "notes"]
    median, goal = data["median_per_run_s"], data["goal_median_per_run_s"]
    extra = (f"median check per graded run {num(median)} s against a goal of {bound(goal)} s: {met(median, goal)}"
             if median is not None else "no check finished")
    return table(header, rows) + source_line(name, data, extra)


# ---- interrupts.json -------------------------------------------------------------------------------
def render_interrupts(name: str, data: Json) -> list[str]:
    """phases -> {exit_s, exit_codes, result_json, out_json, report_json_written, left_at_exit, left_after_3s}:
    Ctrl-C to exit in each phase of a headless run, what the files said, and what was left."""
    goal = data["goal_s"]
    rows = []
    for phase, p in data["phases"].items():
        told = sorted({f"{r}/{o}" for r, o in zip(p["result_json"], p["out_json"], strict=True)})
        rows.append([phase, f"{stat(p['exit_s'], ' s', runs=True)}",
                     f"{num(p['exit_s']['max'])} s" if p["exit_s"]["max"] is not None else "—",
                     met(p["exit_s"]["max"], goal) if p["exit_s"]["max"] is not None else "—",
                     ", ".join(sorted({str(c) for c in p["exit_codes"]})), ", ".join(told),
                     str(p["report_json_written"]), f"{p['left_at_exit']} / {p['left_after_3s']}"])
    header = ["SIGINT during", "to exit: median (range)", "worst", f"worst <= {bound(goal)} s", "exit code",
              "result.json / out.json", "report.json written", "processes left at exit / 3 s later"]
    worst = data["worst"]
    extra = f"`{data['lab']}`, {data['repeat']} runs per phase; worst {num(worst['exit_s'])} s ({worst['phase']})"
    return table(header, rows) + source_line(name, data, extra)


def lab_runs(data: Json) -> str:
    runs = {lab.get("graded_runs") for lab in data["labs"].values()}
    return f"{next(iter(runs))} graded runs per grading, " if len(runs) == 1 and None not in runs else ""


def render_proxy(name: str, data: Json) -> list[str]:
    """metrics -> {KEY: stat}, goals: the network-fault proxy beside the same loopback workload direct."""
    m, goals = data["metrics"], data["goals"]
    ratio = f">= {bound(goals['throughput_ratio_min'])}"
    rows = [
        ["request/reply round trips/s", stat(m["rr_direct_per_s"]), stat(m["rr_proxy_per_s"]),
         f"{stat(m['rr_ratio'])}x", met(m["rr_ratio"]["median"], ratio)],
        ["request/reply p99", stat(m["rr_direct_p99_ms"], " ms"), stat(m["rr_proxy_p99_ms"], " ms"),
         f"+{stat(m['rr_added_p99_ms'], ' ms')}", met(m["rr_added_p99_ms"]["median"], goals["added_p99_ms_max"])],
        ["streaming MB/s", stat(m["stream_direct_mb_per_s"]), stat(m["stream_proxy_mb_per_s"]),
         f"{stat(m['stream_ratio'])}x", met(m["stream_ratio"]["median"], ratio)],
        ["new connection, first reply", stat(m["connect_direct_ms"], " ms"), stat(m["connect_proxy_ms"], " ms"),
         "", ""],
        ["proxy CPU while streaming", "", f"{stat(m['proxy_cpu_s_per_gib'])} CPU-s/GiB", "", ""],
        ["proxy CPU when idle", "", stat(m["idle_cpu_percent"], " % of a core"), "",
         met(m["idle_cpu_percent"]["median"], f"< {bound(goals['idle_cpu_percent_max'])}")],
    ]
    header = ["workload", "direct: median (range)", "through the proxy", "proxy vs direct", "goal"]
    return table(header, rows) + source_line(name, data, f"median of {data['repeat']} repeats")


def render_net_cost(name: str, data: Json) -> list[str]:
    """metrics -> {proxied_cluster: {direct, proxied: {KEY: stat}, proxy_idle_cpu_percent}, plain_cluster:
    {direct}}, same_cluster / whole_path -> compared: the proxies' cost on a real cluster; console: the key."""
    goals, m = data["goals"], data["metrics"]
    plain = m["plain_cluster"]["direct"]
    direct, proxied = m["proxied_cluster"]["direct"], m["proxied_cluster"]["proxied"]
    same, whole = data["same_cluster"]["compared"], data["whole_path"]["compared"]
    ratio = f">= {bound(goals['throughput_ratio_min'])}"
    rows = []
    for key, label in (("produce_demo", "produce, the lab's settings (records/s)"),
                       ("produce_throughput", "produce, linger 10 ms, 256 KiB batches (records/s)"),
                       ("consume", "consume (records/s)")):
        rows.append([label, stat(plain[f"{key}_per_s"]), stat(direct[f"{key}_per_s"]), stat(proxied[f"{key}_per_s"]),
                     f"{num(same[f'{key}_ratio'])}x", f"{num(whole[f'{key}_ratio'])}x",
                     f"{met(same[f'{key}_ratio'], ratio)} / {met(whole[f'{key}_ratio'], ratio)}"])
    for pct in ("p50", "p99"):
        key = f"latency_{pct}_ms"
        added = f"latency_added_{pct}_ms"
        goal = ""
        if pct == "p99":
            # a verdict only where the repetitions agree closer than the goal's 2 ms: else the load spoke
            spread = max(side[key]["max"] - side[key]["min"] for side in (plain, direct, proxied))
            goal = (f"{met(same[added], goals['added_p99_ms_max'])} / {met(whole[added], goals['added_p99_ms_max'])}"
                    if spread <= 10 * goals["added_p99_ms_max"] else f"not measurable: runs {num(spread)} ms apart")
        rows.append([f"produce latency {pct}, acks=all at a fixed rate", stat(plain[key], " ms"),
                     stat(direct[key], " ms"), stat(proxied[key], " ms"), f"{num(same[added])} ms added",
                     f"{num(whole[added])} ms added", goal])
    for key, label in (("produce_throughput", "proxy CPU while producing (% of a core)"),
                       ("consume", "proxy CPU while consuming (% of a core)")):
        rows.append([label, "", stat(direct[f"{key}_proxy_cpu_percent"]), stat(proxied[f"{key}_proxy_cpu_percent"]),
                     "", "", ""])
    idle = m["proxied_cluster"]["proxy_idle_cpu_percent"]
    rows.append(["proxy CPU when idle (% of a core)", "", stat(idle), "", "", "",
                 met(idle["median"], f"< {bound(goals['idle_cpu_percent_max'])}")])
    header = ["workload", "cluster without proxies", "proxied cluster, direct bootstrap", "through the proxy",
              "proxy / direct", "proxy / no proxies", "goal (same cluster / whole path)"]
    out = table(header, rows)
    if ceiling := m["proxied_cluster"].get("loopback_ceiling"):
        out += table(["the proxy alone on loopback, same session", "median (range)"], [
            ["request/reply (1 KiB each way) p50 added", stat(ceiling["rr_added_p50_ms"], " ms")],
            ["request/reply p99 added", stat(ceiling["rr_added_p99_ms"], " ms")],
            ["streaming direct", stat(ceiling["stream_direct_mb_per_s"], " MB/s")],
            ["streaming through the proxy", stat(ceiling["stream_proxy_mb_per_s"], " MB/s")],
            ["proxy CPU while streaming", stat(ceiling["proxy_cpu_s_per_gib"], " CPU-s/GiB")],
        ])
    console = data.get("console")
    if console and "error" in console:
        out += [f"*The console's measurement failed: {cell(console['error'])}.*", ""]
    elif console:
        crow = []
        for key, label in (("key_idle_p95_ms", "broker key to screen, idle, p95"),
                           ("key_live_p95_ms", "broker key to screen, producer running, p95"),
                           ("key_live_median_ms", "broker key to screen, producer running, median"),
                           ("peer_live_p95_ms", "echo peer in the same tmux, producer running, p95")):
            goal = met(console["proxied"][key]["median"], goals["console_key_p95_ms_max"]) if "p95" in key \
                and not key.startswith("peer") else ""
            crow.append([label, stat(console["plain"][key], " ms"), stat(console["proxied"][key], " ms"), goal])
        out += table(["console", "without proxies", "with --net-proxies", "goal"], crow)
        if data.get("console_when"):  # a cluster-only re-run (--console 0) keeps the last console measurement
            out += [f"*The console rows are from the run of {data['console_when']}.*", ""]
    load = load_text(data.get("load_average_at_end"))
    extra = f"median of {data['runs']} repetitions" + (f"; {load} at the end" if load else "")
    return out + source_line(name, data, extra)


# ---- cast-size.json -------------------------------------------------------------------------------
CAST_TARGET_PER_5_MIN = 1_000_000  # docs/recording.md: under 1 MB for 5 minutes of cast


def _bytes(n: float) -> str:
    return f"{n / 1e6:.2f} MB" if n >= 1e6 else f"{n / 1e3:.0f} KB"


def _cast(c: Json) -> str:
    """'6.05 MB (SGR 4.04 MB, cursor 1.11 MB, text 823 KB)'."""
    kinds = c["by_kind"]
    return (f"{_bytes(c['bytes'])} (SGR {_bytes(kinds['sgr'])}, cursor {_bytes(kinds['cursor'])}, "
            f"text {_bytes(kinds['text'])})")


def render_cast_size(name: str, data: Json) -> list[str]:
    """renders -> {SPEEDx: {raw, compacted (+ frames_unlike_raw), recorded_by_kafkalab}}, each a cast's bytes,
    seconds, bytes per 5 minutes and bytes by kind."""
    rows = []
    for speed, r in sorted(data["renders"].items(), key=lambda item: float(item[0].rstrip("x"))):
        raw, compacted, recorded = r["raw"], r["compacted"], r["recorded_by_kafkalab"]
        rows.append([speed, f"{num(raw['cast_s'])} s", _cast(raw), _cast(compacted), _bytes(recorded["bytes"]),
                     f"{_bytes(raw['bytes_per_5_min'])} -> {_bytes(recorded['bytes_per_5_min'])}",
                     met(recorded["bytes_per_5_min"], CAST_TARGET_PER_5_MIN),
                     str(compacted["frames_unlike_raw"])])
    header = ["--speed", "cast", "raw (before)", "compacted, same bytes", "recorded by kafkalab",
              "per 5 minutes", "< 1 MB", "frames unlike the raw screen"]
    return table(header, rows) + source_line(name, data, "the recorded leader-failover run's replay, 160x48")


# ---- dispatch -------------------------------------------------------------------------------------
FAMILIES: list[tuple[re.Pattern[str], Renderer]] = [
    (re.compile(r"labs-platforms(-.+)?"), render_platforms),
    (re.compile(r"labs(-.+)?"), render_labs),
    (re.compile(r"fix(-.+)?"), render_fix),
    (re.compile(r"fix_speed(_.+)?"), render_fix_speed),
    (re.compile(r"cluster"), render_cluster),
    (re.compile(r"clients"), render_clients),
    (re.compile(r"analysis-cluster"), render_analysis_cluster),
    (re.compile(r"analysis-key-order"), render_analysis_key_order),
    (re.compile(r"analysis"), render_analysis),
    (re.compile(r"console"), render_console),
    (re.compile(r"docker"), render_docker),
    (re.compile(r"modes(-.+)?"), render_modes),
    (re.compile(r"report_latency_.+"), render_report_latency),
    (re.compile(r"interrupts"), render_interrupts),
    (re.compile(r"proxy"), render_proxy),
    (re.compile(r"net-cost"), render_net_cost),
    (re.compile(r"cast-size"), render_cast_size),
]


def renderer_for(name: str) -> Renderer | None:
    return next((fn for pattern, fn in FAMILIES if pattern.fullmatch(name)), None)


def results(results_dir: Path) -> list[str]:
    """The names (stems) of every results file."""
    return sorted(p.stem for p in results_dir.glob("*.json"))


def render(results_dir: Path, name: str) -> tuple[str, list[str]]:
    """(markdown, problems) for the results file ``name`` (its stem)."""
    path = results_dir / f"{name}.json"
    if not path.is_file():
        return f"*(no `{path.name}` in benchmarks/results/)*", [f"marker names {path.name}, which does not exist"]
    fn = renderer_for(name)
    if fn is None:
        return f"*(no renderer for `{path.name}`)*", [f"{path.name}: no renderer knows this file: add one to "
                                                      "FAMILIES in docs/hooks/bench_tables.py"]
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return "\n".join(fn(name, data)), []
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        return f"*(`{path.name}` could not be rendered)*", [
            f"{path.name}: {fn.__name__} cannot read it ({type(exc).__name__}: {exc}): its shape changed?"]


def unknown(results_dir: Path) -> list[str]:
    """Problems for results files no renderer knows."""
    return [f"benchmarks/results/{name}.json: no renderer knows this file: add one to FAMILIES in "
            "docs/hooks/bench_tables.py" for name in results(results_dir) if renderer_for(name) is None]
