"""`python -m harness init`: the harness set up in a team's own repository — a scenarios
folder with one example file and a README line, the `[tool.join-harness]` table (in the
repository's pyproject.toml, else a join-harness.toml of its own), and a CI workflow that
runs the scenarios on two Spark versions with this very harness release pinned.

Nothing that exists is overwritten: where one of the files (or the table) is there
already, nothing is written and one line says which."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import harness
from harness.core.files import atomic_write_text
from harness.core.project import OWN_FILE

FILES = Path(__file__).resolve().parent / "init_files"
WORKFLOW = Path(".github") / "workflows" / "join-harness.yml"
TABLE_HEADER = "[tool.join-harness]"


def plan(root: Path) -> tuple[dict, str | None]:
    """(path → text to write, why nothing may be written or None)."""
    pyproject = root / "pyproject.toml"
    table = (FILES / "table.toml").read_text(encoding="utf-8")
    writes = {root / "scenarios" / "example_broadcast.yaml": (FILES / "example.yaml").read_text(encoding="utf-8"),
              root / "scenarios" / "README.md": (FILES / "README.md").read_text(encoding="utf-8"),
              root / WORKFLOW: (FILES / "workflow.yml").read_text(encoding="utf-8").replace("@VERSION@",
                                                                                        harness.__version__)}
    if pyproject.exists():
        text = pyproject.read_text(encoding="utf-8")
        if TABLE_HEADER in text:
            return {}, f"{pyproject}: already has a {TABLE_HEADER} table; nothing written"
        writes[pyproject] = text + ("" if text.endswith("\n") or not text else "\n") + table
    else:
        writes[root / OWN_FILE] = table.replace(TABLE_HEADER + "\n", "").lstrip("\n")
    for path in writes:
        if path.exists() and path != pyproject:
            return {}, f"{path}: exists; nothing written (move it away or add the rest by hand)"
    return writes, None


def main(folder: str | None = None) -> int:
    root = Path(folder or os.getcwd()).resolve()
    if not root.is_dir():
        print(f"error: {root}: no such folder", file=sys.stderr)
        return 2
    writes, refused = plan(root)
    if refused:
        print(f"error: {refused}", file=sys.stderr)
        return 2
    try:
        for path, text in writes.items():
            atomic_write_text(path, text)
    except OSError as exc:
        print(f"error: {exc.filename or root}: cannot be written ({exc.strerror})", file=sys.stderr)
        return 2
    for path in writes:
        print(f"wrote {path.relative_to(root)}")
    print("next: python -m pytest scenarios   (then add one scenario file per join behaviour or bug you rely on)")
    return 0
