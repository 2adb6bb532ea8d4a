"""Which Java a session here would start, and its version, without starting it."""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from pathlib import Path


def java_executable() -> Path | None:
    """The java PySpark's launcher starts: $JAVA_HOME/bin/java, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = Path(home, "bin", "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


@functools.lru_cache(maxsize=None)
def java_version() -> str:
    """That Java's version ("17.0.13", "1.8.0_402"): read from the runtime's `release`
    file, else asked of the binary; "none" without a Java."""
    binary = java_executable()
    if binary is None:
        return "none"
    release = binary.parent.parent / "release"
    try:
        found = re.search(r'^JAVA_VERSION="([^"]+)"', release.read_text(encoding="utf-8", errors="replace"), re.M)
        if found:
            return found.group(1)
    except OSError:
        pass
    try:
        done = subprocess.run([str(binary), "-XshowSettings:properties", "-version"], capture_output=True,
                              text=True, timeout=30)
        found = re.search(r"java\.version = (\S+)", done.stderr)
        return found.group(1) if found else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def java_major(version: str) -> int | None:
    """8 for "1.8.0_402", 17 for "17.0.13"; None when unreadable."""
    found = re.match(r"(\d+)(?:\.(\d+))?", version)
    if not found:
        return None
    major = int(found.group(1))
    return int(found.group(2) or 0) if major == 1 else major
