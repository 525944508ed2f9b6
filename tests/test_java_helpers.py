"""kafkalab's Java helpers: compiled once into the cache, run from their classes, the source launcher without javac."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kafkalab.errors import KafkalabError
from kafkalab.kafka_install import Distribution, java_binary, java_helper_argv, java_helpers, locate

HELLO = ('public class Hello { public static void main(String[] a) {'
         ' System.out.println("hello " + org.apache.kafka.common.Uuid.ZERO_UUID); } }')


@pytest.fixture
def dist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Distribution:
    """The fetched jars; compiled classes go to a fresh cache of this test's own."""
    found = locate()
    monkeypatch.setenv("KAFKALAB_CACHE", str(tmp_path / "cache"))
    return found


def run(argv: list[str]) -> str:
    return subprocess.run([java_binary(), *argv], capture_output=True, text=True, timeout=120, check=True).stdout


def test_a_helper_compiles_once_and_runs_from_its_class(dist: Distribution, tmp_path: Path) -> None:
    source = tmp_path / "Hello.java"
    source.write_text(HELLO)
    argv = java_helper_argv(dist, source)
    helpers = tmp_path / "cache" / "java-helpers"
    assert argv[-1] == "Hello" and str(helpers) in argv[1]
    compiled = next(helpers.glob("Hello-*")) / "Hello.class"
    compiled_at = compiled.stat().st_mtime_ns
    assert run(argv).strip() == "hello AAAAAAAAAAAAAAAAAAAAAA"  # a Kafka class, from the jars
    assert java_helper_argv(dist, source) == argv
    assert compiled.stat().st_mtime_ns == compiled_at  # not compiled again
    source.write_text(HELLO.replace("hello ", "again "))
    again = java_helper_argv(dist, source)
    assert again[1] != argv[1] and run(again).startswith("again ")  # a changed source gets its own classes


def test_a_source_that_does_not_compile_is_one_line(dist: Distribution, tmp_path: Path) -> None:
    source = tmp_path / "Broken.java"
    source.write_text("public class Broken { int x = ; }")
    with pytest.raises(KafkalabError, match=r"compiling Broken.java against .* failed: .*error") as err:
        java_helper_argv(dist, source)
    assert "\n" not in str(err.value)
    assert not list((tmp_path / "cache" / "java-helpers").glob("Broken-*"))


def test_without_javac_the_source_launcher_runs_it(dist: Distribution, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(java_helpers, "_javac", lambda: None)  # a JRE only: the one thing faked
    source = tmp_path / "Hello.java"
    source.write_text(HELLO)
    assert java_helper_argv(dist, source) == ["-cp", dist.classpath, str(source)]
    assert run(java_helper_argv(dist, source)).strip() == "hello AAAAAAAAAAAAAAAAAAAAAA"
    assert not (tmp_path / "cache" / "java-helpers").exists()


def test_fetch_compiles_every_helper(dist: Distribution, tmp_path: Path) -> None:
    said: list[str] = []
    java_helpers.compile_helpers(dist, said.append)
    names = sorted(p.name.split("-")[0] for p in (tmp_path / "cache" / "java-helpers").iterdir())
    assert names == ["ConfigDefs", "FormatStorage", "QuorumWatch", "Reassign"]
    assert said == [f"Java helpers ready for Kafka {dist.version()} (FormatStorage.java, QuorumWatch.java, "
                    "Reassign.java, ConfigDefs.java)"]
