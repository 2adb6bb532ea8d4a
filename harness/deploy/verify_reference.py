"""`python -m harness verify-reference [VERSIONS...]`: the verification suite of the
reference engine's translations (harness.observe.reference_verify) on the installed Spark,
or on each named version in its matrix environment; prints, per entry, agreed or differed
with an example, and with --write records in the verified list
(harness/observe/reference_verified.json) the ANSI modes and time zones each entry agreed
in on each version. Exit 1 when an entry the list says is verified here now differs."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from harness.core.files import atomic_write_text
from harness.observe import reference_gate as gate
from harness.observe import reference_verify as suite


def selected(entries: list[dict], only: list[str]) -> list[int]:
    wanted = {name.lower() for name in only}
    return [i for i, entry in enumerate(entries) if not wanted or entry["expression"].lower() in wanted]


def run_here(only: list[str], ansi_modes: list[str], zones: list[str], log=print) -> dict:
    """{entry index: {"ansi zone": outcome dict}} on the Spark installed here."""
    from harness.core.options import RunOptions
    from harness.spark.session import get_session
    verified = gate.VerifiedList.load()
    session = get_session(RunOptions())
    spark = session.spark
    spark.sparkContext.setLogLevel("OFF")  # a row Spark refuses is expected: no stack trace for it
    gate.warn_missing_once(verified, spark._jvm, spark.version)
    indices = selected(verified.data["entries"], only)
    entries = [verified.data["entries"][i] for i in indices]
    log(f"Spark {spark.version}: {len(entries)} entries, ANSI {'/'.join(ansi_modes)}, zones {', '.join(zones)}")
    def done(i, ansi, zone, outcome):
        if not outcome.agrees:
            log(f"  {entries[i]['expression']}({', '.join(entries[i]['inputs'])}) ANSI {ansi} {zone}: "
                f"{outcome.error or outcome.differed[:1] or 'no case'}")
    results = suite.verify(spark, entries, tuple(ansi_modes), tuple(zones), done)
    import duckdb
    import sqlglot
    return {"version": spark.version, "engines": {"duckdb": duckdb.__version__, "sqlglot": sqlglot.__version__},
            "results": {json.dumps(gate.entry_key(entries[i])): {f"{a} {z}": vars(o) for (a, z), o in by_conf.items()}
                        for i, by_conf in results.items()}}


def run_in_env(version: str, only: list[str], ansi_modes: list[str], zones: list[str], log=print) -> dict | None:
    from harness.deploy import matrix
    python = matrix.ensure_env(version, log)
    if python is None:
        return None
    env, _ = matrix.pytest_env(version, python, "1")
    args = [str(python), "-m", "harness", "verify-reference", "--json", "--ansi", ",".join(ansi_modes),
            "--zones", ",".join(zones)] + [a for name in only for a in ("--only", name)]
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=3600)
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("VERIFIED ")), None)
    if line is None:
        log(f"Spark {version}: no result ({(done.stderr.strip().splitlines() or ['no output'])[-1]})")
        return None
    return json.loads(line[len("VERIFIED "):])


def describe(entry: dict, by_conf: dict) -> tuple[str, bool]:
    """One line for an entry over its configurations, and whether it agreed in all."""
    signature = f"{entry['expression']}({', '.join(entry['inputs'])})" + \
        (f" -> {entry['output']}" if entry.get("output") else "")
    cases = sum(o["cases"] for o in by_conf.values())
    bad = {conf: o for conf, o in by_conf.items() if o["error"] or o["differed"] or not o["cases"]}
    if not bad:
        refused = sum(o["refused_by_duckdb"] for o in by_conf.values())
        extra = f", {refused} refused by DuckDB (never compared)" if refused else ""
        return f"agreed   {signature}: {cases} cases{extra}", True
    conf, outcome = next(iter(sorted(bad.items())))
    if outcome["error"]:
        example = outcome["error"]
    elif outcome["differed"]:
        template, inputs, spark_value, duck_value = outcome["differed"][0]
        example = (f"{template} with {inputs}: Spark {spark_value!r}, DuckDB {duck_value!r} "
                   f"({len(outcome['differed'])} rows)")
    else:
        example = "no edge row that both engines answer"
    return f"differed {signature} [{', '.join(sorted(bad))}]: {example}", False


def record(entry: dict, version: str, by_conf: dict, ansi_modes: list[str], zones: list[str],
           engines: dict | None = None) -> None:
    ok = {tuple(conf.split(" ", 1)): o["error"] is None and not o["differed"] and o["cases"] > 0
          for conf, o in by_conf.items()}
    modes = [m for m in ansi_modes if all(ok.get((m, z)) for z in zones)]
    runs = entry.setdefault("verified", {})
    if modes:
        runs[version] = {"ansi": modes, "zones": list(zones), **(engines or {})}
    else:
        runs.pop(version, None)


def write_runs(runs: list[dict], ansi_modes: list[str], zones: list[str]) -> None:
    """Record the runs in the list, read again under a lock just before it is written: runs
    of several versions side by side each add their own."""
    import fcntl
    import tempfile
    with open(Path(tempfile.gettempdir()) / "spark-join-harness-verified.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        verified = gate.VerifiedList.load()
        by_key = {json.dumps(gate.entry_key(entry)): entry for entry in verified.data["entries"]}
        for run in runs:
            for key, by_conf in run["results"].items():
                if key in by_key:
                    record(by_key[key], run["version"], by_conf, ansi_modes, zones, run.get("engines"))
        atomic_write_text(Path(verified.source), document_text(verified.data))


def document_text(data: dict) -> str:
    """The list's text: one entry a line, so a new version reads as a small diff."""
    lines = [json.dumps(entry, ensure_ascii=False, sort_keys=False) for entry in data["entries"]]
    return "{\n" + f'"about": {json.dumps(data["about"])},\n"entries": [\n' + ",\n".join(lines) + "\n]}\n"


def main(versions: list[str], only: list[str], ansi: str, zones: str, write: bool, as_json: bool,
         log=print) -> int:
    ansi_modes = [m for m in ansi.split(",") if m]
    zone_list = [z for z in zones.split(",") if z]
    if write and (sorted(ansi_modes) != ["off", "on"] or sorted(zone_list) != sorted(suite.ZONES)):
        log(f"error: --write records an entry verified in both ANSI modes and in {' and '.join(suite.ZONES)}: "
            "run it with the default --ansi and --zones")
        return 2
    if as_json:
        print("VERIFIED " + json.dumps(run_here(only, ansi_modes, zone_list, log=lambda m: None)))
        return 0
    runs = [run_here(only, ansi_modes, zone_list, log)] if not versions else \
        [found for v in versions for found in [run_in_env(v, only, ansi_modes, zone_list, log)] if found]
    verified = gate.VerifiedList.load()
    by_key = {json.dumps(gate.entry_key(entry)): entry for entry in verified.data["entries"]}
    regressions = 0
    for run in runs:
        version, agreed, cases = run["version"], 0, 0
        log(f"== Spark {version}")
        for key, by_conf in run["results"].items():
            entry = by_key[key]
            line, ok = describe(entry, by_conf)
            log(line)
            agreed += ok
            cases += sum(o["cases"] for o in by_conf.values())
            was = all(gate.verified_here(entry, version, m == "on", z) for m in ansi_modes for z in zone_list)
            regressions += was and not ok
        log(f"Spark {version}: {agreed} of {len(run['results'])} entries agreed over {cases} edge cases")
    if write:
        write_runs(runs, ansi_modes, zone_list)
        log(f"wrote {verified.source}")
    return 1 if regressions and not write else 0
