"""The packages of harness/ import one way: each from itself and from those before it in
harness.LAYERS, never from a later one nor from the plugin or the command line on top.
Read from the source (every import, also those inside functions), so a lazy import
cannot hide a wrong arrow."""
from __future__ import annotations

import ast
from pathlib import Path

import harness

HARNESS = Path(harness.__file__).resolve().parent
TOP = "top"  # harness/__init__, cli, __main__, plugin: may import anything


def _package_of(module: str) -> str:
    """`harness.spark.session` → `spark`; a module directly in harness/ → top."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 and parts[1] in harness.LAYERS else TOP


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(tree: ast.AST, root: Path) -> list[tuple[int, str]]:
    """(line, module) of every harness import; `from harness.x import y` counts as x.y when
    y is a module of x, as x otherwise."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "harness"]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"line {node.lineno}: a relative import (write harness.…)"
            if (node.module or "").split(".")[0] == "harness":
                for alias in node.names:
                    candidate = f"{node.module}.{alias.name}"
                    where = root.parent / Path(*candidate.split("."))
                    is_module = where.with_suffix(".py").exists() or where.is_dir()
                    found.append((node.lineno, candidate if is_module else node.module))
    return found


def arrows_against_the_flow(root: Path = HARNESS) -> list[str]:
    order = {name: i for i, name in enumerate(harness.LAYERS)}
    wrong = []
    for path in sorted(root.rglob("*.py")):
        importer = _module_name(path, root)
        package = _package_of(importer)
        if package == TOP:
            continue
        for line, imported in _imported(ast.parse(path.read_text(), str(path)), root):
            target = _package_of(imported)
            if target == TOP and imported != "harness":
                wrong.append(f"{path.relative_to(root.parent)}:{line}: {package} imports {imported} (the top)")
            elif target != TOP and order[target] > order[package]:
                wrong.append(f"{path.relative_to(root.parent)}:{line}: {package} imports {imported} ({target} "
                             f"comes after {package} in harness.LAYERS)")
    return wrong


def test_every_import_runs_with_the_flow():
    assert arrows_against_the_flow() == []


def test_every_package_is_a_layer_with_its_job_said():
    packages = {p.parent.name for p in HARNESS.glob("*/__init__.py")}
    assert packages == set(harness.LAYERS)
    for name in harness.LAYERS:
        assert ast.get_docstring(ast.parse((HARNESS / name / "__init__.py").read_text())), name


def test_the_check_sees_an_arrow_against_the_flow(tmp_path):
    tree = tmp_path / "harness"
    (tree / "spark").mkdir(parents=True)
    (tree / "check").mkdir()
    (tree / "spark" / "session.py").write_text("def f():\n    from harness.check import runner\n")
    (tree / "check" / "runner.py").write_text("from harness.spark.session import f\n")
    assert arrows_against_the_flow(tree) == [
        "harness/spark/session.py:2: spark imports harness.check.runner (check comes after spark in harness.LAYERS)"]
