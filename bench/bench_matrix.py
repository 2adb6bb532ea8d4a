"""Wall time of the whole version matrix (make bench-matrix [VERSIONS="..."]).

Builds any missing environment first (timed apart), then runs the suite on every
version one after another (2 cores: versions in parallel would only share them) and
prints the wall time per version and in total, from reports/matrix.json.
"""
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness import matrix  # noqa: E402
from harness.util import clock  # noqa: E402

TARGET_S = 20 * 60  # the target for 8 versions on this 2-core machine


def main(versions: list[str]) -> int:
    versions = versions or list(matrix.DEFAULT_VERSIONS)
    started = time.perf_counter()
    for spark in versions:
        matrix.ensure_env(spark, print)
    print(f"[bench-matrix] environments ready in {clock(time.perf_counter() - started)}")
    code = matrix.main(versions)
    timings = json.loads(Path("reports/matrix.json").read_text())
    print("\n[bench-matrix] version   python   java          wall    exit")
    for run in timings["versions"]:
        print(f"[bench-matrix] {run['spark']:<9} {run['python']:<8} {run['java']:<13} {clock(run['seconds']):>7}  {run['exit']}")
    n = len(timings["versions"])
    per_version = timings["suite_s"] / max(n, 1)
    print(f"[bench-matrix] {n} versions: {clock(timings['suite_s'])} of suites "
          f"({clock(per_version)} per version); 8 versions at that rate: {clock(8 * per_version)} "
          f"(target {clock(TARGET_S)})")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
