"""Files written whole or not at all: every report is a temp file beside its target, then a
rename; temp files a killed process left behind are cleared by the next writer."""
from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

TEMP_MARK = ".tmp-"


def atomic_write_text(path: Path, text: str) -> None:
    """Write the whole file or nothing: a temp file beside it, then a rename. A failure
    leaves no temp file; a kill leaves one that `remove_stale_temps` clears."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}{TEMP_MARK}{os.getpid()}-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; reports are for everyone to read
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def remove_stale_temps(folder: Path) -> int:
    """Delete temp files that an atomic write of a process that no longer runs left behind."""
    removed = 0
    for tmp in Path(folder).glob(f".*{TEMP_MARK}*.tmp"):
        match = re.search(re.escape(TEMP_MARK) + r"(\d+)-", tmp.name)
        if match and not _pid_alive(int(match.group(1))):
            try:
                tmp.unlink()
                removed += 1
            except OSError:
                pass
    return removed
