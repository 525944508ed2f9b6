"""Installed like a tool: the wheel, built from this tree and installed into a fresh venv outside it, run from
a temporary directory. It lists every lab, shows one, fetches the jars without Maven (from a repository on
127.0.0.1, every checksum verified), runs the setup check on a real cluster, and its console starts under
Textual's pilot.

To keep CI time down the fresh venv gets the test venv's third-party packages through a .pth file and the
wheel itself is installed with --no-deps --no-index: what is under test is the wheel, not pip's resolver.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from kafkalab import KAFKA_VERSION
from kafkalab.kafka_install.artifacts import load_artifacts, matches
from tests.maven_repo import RepoServer, serve_artifacts
from tests.test_labs_cluster import finish

pytestmark = pytest.mark.cluster

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = load_artifacts(KAFKA_VERSION)


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path
    work: Path  # the temporary directory every command runs in
    env: dict[str, str]

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """The installed `kafkalab` command (stdout and stderr in one); on timeout its process group is killed."""
        return self._run([str(self.venv / "bin" / "kafkalab"), *args], timeout)

    def python(self, script: str, timeout: float) -> subprocess.CompletedProcess[str]:
        return self._run([str(self.venv / "bin" / "python"), "-c", script], timeout)

    def _run(self, cmd: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
        proc = subprocess.Popen(cmd, cwd=self.work, env=self.env, text=True, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True)
        out = finish(proc, timeout)
        return subprocess.CompletedProcess(cmd, proc.returncode, out)


def leftovers(root: Path) -> list[psutil.Process]:
    """Processes whose command line names ``root`` (nodes carry their state dir in it)."""
    return [p for p in psutil.process_iter(["cmdline"])
            if p.pid != os.getpid() and str(root) in " ".join(p.info["cmdline"] or [])]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    root = tmp_path_factory.mktemp("install")
    wheels = root / "wheels"
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
         "-w", str(wheels), str(REPO)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-3000:]
    wheel = next(wheels.glob("kafkalab-*.whl"))
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site = next(venv.glob("lib/python*/site-packages"))
    (site / "test-venv-packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                           "--no-deps", "--no-index", str(wheel)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    work = root / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KAFKA_HOME", "VIRTUAL_ENV")}
    env |= {"KAFKALAB_CACHE": str(root / "cache"), "KAFKALAB_STATE": str(root / "state"), "COLUMNS": "200",
            "NO_PROXY": "127.0.0.1", "PYTHONUNBUFFERED": "1"}
    try:
        yield Installed(wheel, venv, work, env)
    finally:
        for proc in leftovers(root):
            proc.kill()


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RepoServer]:
    with serve_artifacts(tmp_path_factory.mktemp("maven-repo"), ARTIFACTS, KAFKA_VERSION) as server:
        yield server


@pytest.fixture(scope="module")
def fetched(installed: Installed, repo: RepoServer) -> Path:
    """The installed kafkalab's own download into the temporary cache: the libs dir."""
    cache = Path(installed.env["KAFKALAB_CACHE"])
    done = installed.run("fetch", "--no-maven", "--maven-repo", repo.url, "--cache-dir", str(cache), timeout=600)
    assert done.returncode == 0, done.stdout[-3000:]
    return cache / f"kafka-{KAFKA_VERSION}" / "libs"


def test_the_wheel_carries_every_module_lab_and_asset(installed: Installed) -> None:
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    expected = {str(p.relative_to(REPO)) for p in (REPO / "kafkalab").rglob("*")
                if p.is_file() and "__pycache__" not in p.parts}
    expected |= {f"kafkalab/_labs/{p.name}" for p in (REPO / "labs").iterdir() if p.suffix in (".toml", ".py")}
    expected |= {f"kafkalab/_assets/{p.name}" for p in (REPO / "assets").iterdir() if p.is_file()}
    assert expected - names == set()


def test_the_installed_package_is_the_one_run(installed: Installed) -> None:
    done = installed.python("import kafkalab, kafkalab.paths as p; print(kafkalab.__file__); print(p.labs_dir())", 60)
    package, labs = done.stdout.split()
    assert Path(package).is_relative_to(installed.venv) and Path(labs).is_relative_to(installed.venv)


def test_labs_lists_every_lab_file(installed: Installed) -> None:
    done = installed.run("labs")
    assert done.returncode == 0, done.stdout
    ids = [p.stem.split("-", 1)[1] for p in sorted((REPO / "labs").glob("*.toml"))]
    assert ids and [i for i in ids if i not in done.stdout] == []


def test_labs_show_prints_the_instructions(installed: Installed) -> None:
    done = installed.run("labs", "--show", "leader-failover")
    assert done.returncode == 0, done.stdout
    assert "(leader-failover)" in done.stdout and "Why it works every time" in done.stdout
    assert "kills the leader of partition 0" in " ".join(done.stdout.split())


def test_fetch_without_maven_verifies_every_checksum(fetched: Path, repo: RepoServer) -> None:
    assert sorted(p.name for p in fetched.iterdir()) == sorted(a.filename for a in ARTIFACTS)
    assert all(matches(fetched / a.filename, a) for a in ARTIFACTS)
    assert all(repo.gets(a) == [None] for a in ARTIFACTS)


@pytest.mark.timeout(1200)  # a cluster and a Spark job; the shared machine can be slow
def test_setup_check_runs_on_the_fetched_jars(installed: Installed, fetched: Path) -> None:
    runs = installed.work / "runs"
    done = installed.run("run", "setup-check", "--headless", "--free-ports", "--runs-dir", str(runs), timeout=900)
    assert done.returncode == 0, done.stdout[-3000:]
    assert leftovers(runs) == [], "every JVM and consumer of the run ended"


PILOT = textwrap.dedent("""
    import asyncio, sys
    from pathlib import Path
    from kafkalab import kafka_install
    from kafkalab.cluster import Cluster, ClusterSpec
    from kafkalab.ui.app import LabConsole
    from kafkalab.feeds.cluster_source import ClusterSource

    async def main() -> None:
        spec = ClusterSpec(state_dir=Path(sys.argv[1]), brokers=1, free_ports=True)
        source = ClusterSource(Cluster(spec, kafka_install.locate()))
        app = LabConsole(source, spec.broker_ids)
        try:
            async with app.run_test(size=(120, 36)) as pilot:
                for _ in range(1800):
                    if app.snapshot is not None and app.snapshot.reachable:
                        break
                    await asyncio.sleep(0.1)
                await pilot.pause()
                print("reachable", bool(app.snapshot and app.snapshot.reachable))
                print("css", app.css_path[0].name, app.css_path[0].is_file(), len(app.stylesheet.rules))
        finally:
            source.close()

    asyncio.run(main())
""")


@pytest.mark.timeout(900)
def test_the_console_starts_under_the_pilot(installed: Installed, fetched: Path) -> None:
    state = installed.work / "console-state"
    done = installed.python(PILOT.replace("sys.argv[1]", repr(str(state))), timeout=600)
    assert done.returncode == 0, done.stdout[-3000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if line.startswith(("reachable ", "css ")))
    assert lines["reachable"] == "True", "the console got a snapshot of its cluster"
    name, present, rules = lines["css"].split()
    assert (name, present) == ("app.tcss", "True") and int(rules) > 0, "the stylesheet came with the wheel"
    assert leftovers(state) == []
