"""The PySpark releases the package registry has, fetched once and kept beside the
environments (`.matrix/pyspark-releases.json`): what `bisect` searches between two versions.

Only final releases count (no `.devN`, no release candidate). When the registry cannot be
reached, the kept list is used; without one, the releases whose environments are already
built, said in one line."""
from __future__ import annotations

import json
import re
import urllib.request

from harness.core.files import atomic_write_text
from harness.core.vocab import spark_version
from harness.deploy import matrix

REGISTRY = "https://pypi.org/simple/pyspark/"
FINAL = re.compile(r"^\d+\.\d+\.\d+$")
CACHE_NAME = "pyspark-releases.json"


class ReleaseError(ValueError):
    """One line: why two versions cannot be searched between."""


def _fetched(timeout: float = 20.0) -> list[str]:
    request = urllib.request.Request(REGISTRY, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=timeout) as answer:  # noqa: S310 (a fixed https URL)
        return list(json.load(answer)["versions"])


def releases(refresh: bool = False, log=print, fetch=_fetched) -> list[str]:
    """Every final PySpark release, oldest first."""
    cache = matrix.env_root() / CACHE_NAME
    if refresh or not cache.exists():
        try:
            found = fetch()
            cache.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(cache, json.dumps(sorted_releases(found)) + "\n")
        except (OSError, ValueError, KeyError) as exc:
            if cache.exists():
                log(f"[bisect] the package registry cannot be reached ({exc}): the list kept in {cache} is used")
            else:
                built = matrix.built_versions()
                log(f"[bisect] the package registry cannot be reached ({exc}): only the releases with an "
                    f"environment here are searched ({', '.join(sorted_releases(built)) or 'none'})")
                return sorted_releases(built)
    return json.loads(cache.read_text(encoding="utf-8"))


def sorted_releases(versions) -> list[str]:
    return sorted({v for v in versions if FINAL.match(v)}, key=spark_version)


def between(good: str, bad: str, known: list[str]) -> list[str]:
    """good, every release strictly between them, bad: the line `bisect` searches."""
    for name, version in (("--good", good), ("--bad", bad)):
        if version not in known:
            close = [v for v in known if v.rsplit(".", 1)[0] == version.rsplit(".", 1)[0]]
            raise ReleaseError(f"{name} {version}: the package registry has no PySpark {version}"
                               + (f" (releases of {version.rsplit('.', 1)[0]}: {', '.join(close)})" if close else ""))
    if spark_version(good) >= spark_version(bad):
        raise ReleaseError(f"--good {good} is not older than --bad {bad}")
    return [v for v in known if spark_version(good) <= spark_version(v) <= spark_version(bad)]
