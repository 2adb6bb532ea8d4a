"""JVM packages from a Maven repository: fetched once into a cache outside the checkout,
checked against the SHA-1 the registry publishes, fetched again when damaged, and one
line saying what to download and where to put it when that cannot be done. The Iceberg
runtime (harness.spark.formats.iceberg) and the Spark Connect server of 3.4 and 3.5
(harness.deploy.connect_server) come from here.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

MAVEN_CENTRAL = "https://repo1.maven.org/maven2"


@dataclass(frozen=True)
class Coordinate:
    group: str
    artifact: str
    version: str
    marker: str = ""   # a class file the jar must hold (a jar put in the cache by hand is checked by it)

    def words(self) -> str:
        return f"{self.group}:{self.artifact}:{self.version}"

    def file_name(self) -> str:
        return f"{self.artifact}-{self.version}.jar"

    def url(self, repository: str) -> str:
        return f"{repository.rstrip('/')}/{self.group.replace('.', '/')}/{self.artifact}/{self.version}/{self.file_name()}"


class PackageUnavailable(Exception):
    """A jar could not be fetched or read: one line saying what to put where."""


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "spark-join-harness" / "jars"


def cache_of(options) -> Path:
    """The jar cache a run's options name (`jar_cache`), else the user's cache folder."""
    return Path(options.jar_cache) if options.jar_cache else default_cache()


def ensure_jar(coordinate: Coordinate, cache: Path, repository: str = MAVEN_CENTRAL) -> Path:
    """The jar in `cache`, fetched if absent or damaged (checked against the SHA-1
    the registry published, kept beside it). One fetch at a time per cache: the workers of
    a run share it."""
    cache.mkdir(parents=True, exist_ok=True)
    jar = cache / coordinate.file_name()
    with open(cache / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _intact(jar, coordinate.marker):
            return jar
        _fetch(coordinate, jar, repository)
        return jar


def _sha1(path: Path) -> str:
    hasher = hashlib.sha1()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            hasher.update(block)
    return hasher.hexdigest()


def _opens(jar: Path, marker: str) -> bool:
    try:
        with zipfile.ZipFile(jar) as archive:
            return not marker or archive.getinfo(marker) is not None
    except (OSError, KeyError, zipfile.BadZipFile):
        return False


def _intact(jar: Path, marker: str) -> bool:
    """A jar this harness fetched matches the checksum fetched with it; one put there by
    hand (no checksum beside it) must at least open and hold its marker class."""
    if not jar.is_file():
        return False
    recorded = jar.with_name(jar.name + ".sha1")
    if recorded.is_file():
        return recorded.read_text().split()[0].strip() == _sha1(jar)
    return _opens(jar, marker)


def _fetch(coordinate: Coordinate, jar: Path, repository: str) -> None:
    url = coordinate.url(repository)
    staging = jar.with_name(f".{jar.name}.{os.getpid()}.part")
    try:
        with urllib.request.urlopen(url + ".sha1", timeout=60) as answer:
            expected = answer.read().decode("ascii", "replace").split()[0].strip().lower()
        with urllib.request.urlopen(url, timeout=600) as answer, open(staging, "wb") as out:
            for block in iter(lambda: answer.read(1 << 20), b""):
                out.write(block)
        got = _sha1(staging)
        if got != expected:
            raise PackageUnavailable(f"the download of {url} does not match its published SHA-1 ({got} ≠ {expected})")
        os.replace(staging, jar)
        jar.with_name(jar.name + ".sha1").write_text(expected + "\n")
    except PackageUnavailable as exc:
        raise PackageUnavailable(f"{exc}; fetch {coordinate.words()} and put it at {jar}") from None
    except Exception as exc:
        raise PackageUnavailable(f"cannot fetch {coordinate.words()} from {repository} "
                                 f"({type(exc).__name__}: {exc}); download {url} and put it at {jar}") from None
    finally:
        staging.unlink(missing_ok=True)
