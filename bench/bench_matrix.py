"""Wall time of the whole version matrix (make bench-matrix [VERSIONS="..."]).

Builds any missing environment first (timed apart), then runs the suite on every
version one after another (2 cores: versions in parallel would only share them) and
prints the wall time per version and in total, from reports/matrix.json. With
`--baseline DIR` (make bench-matrix BASELINE=DIR), each version's results are compared
with that earlier run's (bench/compare_runs.py): a speed change must not move them.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness.core.text import clock  # noqa: E402
from harness.deploy import matrix  # noqa: E402

TARGET_S = 10 * 60  # issue 16's target for 8 versions on this 2-core machine


def main(argv: list[str]) -> int:
    baseline = None
    if "--baseline" in argv:
        at = argv.index("--baseline")
        baseline, argv = argv[at + 1], argv[:at] + argv[at + 2:]
    versions = argv or list(matrix.DEFAULT_VERSIONS)
    started = time.perf_counter()
    for spark in versions:
        matrix.ensure_env(spark, print)
    print(f"[bench-matrix] environments ready in {clock(time.perf_counter() - started)}")
    code = matrix.main(versions)
    timings = json.loads(Path("reports/matrix.json").read_text())
    print("\n[bench-matrix] version   python   java          wall    exit")
    for run in timings["versions"]:
        print(f"[bench-matrix] {run['spark']:<9} {run['python']:<8} {run['java']:<13} {clock(run['seconds']):>7}  {run['exit']}")
    print("\n[bench-matrix] where the time went (item time summed over the workers, from results.json)")
    print("[bench-matrix] version   cases  build    plan     execute  shared   agreement  items")
    for run in timings["versions"]:
        phases = phase_seconds(Path("reports") / run["spark"] / "results.json")
        if phases:
            print(f"[bench-matrix] {run['spark']:<9} {phases['cases']:>5}  {clock(phases['build_s']):>7}  "
                  f"{clock(phases['plan_s']):>7}  {clock(phases['execute_s']):>7}  {phases['shared']:>5}    "
                  f"{clock(phases['agreement_s']):>8}  {clock(phases['total_s']):>7}")
    n = len(timings["versions"])
    per_version = timings["suite_s"] / max(n, 1)
    print(f"[bench-matrix] {n} versions: {clock(timings['suite_s'])} of suites "
          f"({clock(per_version)} per version); 8 versions at that rate: {clock(8 * per_version)} "
          f"(target {clock(TARGET_S)})")
    if baseline:
        import compare_runs
        ran = [run["spark"] for run in timings["versions"]]
        if compare_runs.main([baseline, "reports", *ran]):
            code = code or 1
    return code


def phase_seconds(results_path: Path) -> dict | None:
    """Per phase, summed over a version's records: building inputs, planning, executing
    (cases), the cross-strategy items, and how many executions were shared."""
    try:
        records = json.loads(results_path.read_text())["cases"]
    except (OSError, ValueError, KeyError):
        return None
    out = {"cases": 0, "build_s": 0.0, "plan_s": 0.0, "execute_s": 0.0, "shared": 0, "agreement_s": 0.0,
           "total_s": 0.0}
    for record in records:
        timings = record.get("timings") or {}
        out["total_s"] += timings.get("total_s", 0.0)
        if record.get("kind") == "agreement":
            out["agreement_s"] += timings.get("total_s", 0.0)
            continue
        out["cases"] += 1
        for phase in ("build_s", "plan_s", "execute_s"):
            out[phase] += timings.get(phase, 0.0)
        out["shared"] += int(bool(timings.get("shared_execution")))
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
