"""Download the jars of a checksum list from a Maven repository over HTTP(S), without Maven.

Each jar goes to ``NAME.jar.part`` first, resumes with an HTTP Range request where a previous run stopped,
and becomes ``NAME.jar`` only once its size, SHA-256 and SHA-1 match the list; a mismatch discards it and
fetches it again. urllib honours the usual proxy variables (HTTPS_PROXY, HTTP_PROXY, NO_PROXY).
"""

from __future__ import annotations

import http.client
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kafkalab import __version__
from kafkalab.errors import KafkalabError
from kafkalab.kafka_install.artifacts import Artifact, matches

CENTRAL = "https://repo.maven.apache.org/maven2/"
ATTEMPTS = 3
CHUNK = 1 << 16
TIMEOUT_S = 60


def _ignore(_value: object) -> None:
    return None


@dataclass(frozen=True)
class Progress:
    """What a fetch reports: status lines, and bytes against the total (a progress bar)."""

    line: Callable[[str], None] = _ignore
    total: Callable[[int], None] = _ignore
    advance: Callable[[int], None] = _ignore


QUIET = Progress()


def download_all(artifacts: list[Artifact], repo_url: str, libs: Path, progress: Progress) -> None:
    """Every artifact into ``libs`` (already verified ones are kept), each verified; raises on failure."""
    libs.mkdir(parents=True, exist_ok=True)
    base = repo_url.rstrip("/") + "/"
    progress.total(sum(a.size for a in artifacts))
    for artifact in artifacts:
        download(artifact, base, libs, progress)


def download(artifact: Artifact, base: str, libs: Path, progress: Progress) -> Path:
    """One jar, resumed from its .part file, verified; fetched anew when its bytes do not match."""
    final = libs / artifact.filename
    if matches(final, artifact):
        progress.advance(artifact.size)
        return final
    part = libs / (artifact.filename + ".part")
    url = base + artifact.repo_path
    progress.advance(part.stat().st_size if part.exists() else 0)  # the progress bar counts what .part holds
    last = ""
    for attempt in range(1, ATTEMPTS + 1):
        progress.line(f"{artifact.filename} ({artifact.size / 2**20:.1f} MB)")
        try:
            _transfer(url, part, artifact.size, progress)
        except urllib.error.HTTPError as exc:
            if exc.code in (401, 403, 404):
                raise KafkalabError(
                    f"{url}: HTTP {exc.code}: the repository lacks {artifact.coordinates}: check --maven-repo"
                ) from None
            last = f"HTTP {exc.code}"
            continue
        except (OSError, http.client.HTTPException) as exc:  # refused, reset, cut short, timeout: resume
            last = str(getattr(exc, "reason", exc)) or type(exc).__name__
            continue
        if matches(part, artifact):
            part.replace(final)
            return final
        progress.line(f"{artifact.filename}: checksum mismatch (attempt {attempt}), fetching it again")
        progress.advance(-part.stat().st_size)
        part.unlink()
        last = "checksum mismatch"
    if last == "checksum mismatch":
        raise KafkalabError(
            f"{url} does not match the SHA-256 kafkalab ships, {ATTEMPTS} times: the repository serves another file; "
            "name a trustworthy mirror with --maven-repo"
        )
    raise KafkalabError(
        f"cannot download {url} ({last}): check the network or the proxy (HTTPS_PROXY), name a mirror with "
        "--maven-repo, or install an offline bundle with --from; the next `kafkalab fetch` resumes"
    )


def _transfer(url: str, part: Path, size: int, progress: Progress) -> None:
    """Append the rest of the file to ``part`` (Range from its size), or rewrite it if the server ignores Range."""
    have = part.stat().st_size if part.exists() else 0
    if have > size:
        part.unlink()
        progress.advance(-have)
        have = 0
    if have == size:
        return
    headers = {"User-Agent": f"kafkalab/{__version__}"}
    if have:
        headers["Range"] = f"bytes={have}-"
    request = urllib.request.Request(url, headers=headers)
    try:
        response = urllib.request.urlopen(request, timeout=TIMEOUT_S)
    except urllib.error.HTTPError as exc:
        if exc.code != 416:  # 416: the Range is past the end, so the .part is bad: start over
            raise
        del headers["Range"]
        response = urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=TIMEOUT_S)
    with response:
        resumed = have > 0 and response.status == 206
        if have and not resumed:
            progress.advance(-have)
        with part.open("ab" if resumed else "wb") as out:
            while chunk := response.read(CHUNK):
                out.write(chunk)
                progress.advance(len(chunk))
    if part.stat().st_size < size:  # the server ended early: resume rather than call it corrupt
        raise ConnectionError(f"cut short at {part.stat().st_size} of {size} bytes")
