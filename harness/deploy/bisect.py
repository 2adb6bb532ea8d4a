"""In which release a case changed: a binary search over every PySpark release between a
good and a bad version, per case and per kind of change (`python -m harness bisect`).

A case's observation on two versions is compared as `diff` compares it (strategy and build
side of every join, final plan, join order and types, subqueries, rows and checksum,
error, warnings, estimates and cost beyond the threshold, the cross-strategy check's
answers through its status). For each kind that differs between --good and --bad, the
search narrows the releases between them down to two adjacent ones: the newest that still
looks like --good for that kind, the oldest after it that looks like --bad. Like `git
bisect`, a release that cannot be tested (its environment cannot be built, Spark does not
start, the case times out there) is skipped and named, and the search goes on around it.

Each probe is one pytest run of the cases that want that release, in its environment
(built on demand as `matrix` builds it), against the matrix's result store: an observation
the store holds is not made again. Releases whose environment is already built are
preferred when they lie near the middle of an interval.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.core import project
from harness.core.files import atomic_write_text
from harness.deploy import matrix, releases
from harness.report import diff

# Kinds a search cannot settle: nothing of Spark's behaviour, or not seen on one side.
UNSEARCHED = ("not comparable", "only in one version", diff.UNSEEN)
RESULTS = "results.json"


class BisectError(ValueError):
    """One line: why a search cannot start."""


@dataclass
class KindSearch:
    """One kind of change of one case: the interval of the release line it lies in."""
    kind: str
    texts: list[str]          # how it changed between --good and --bad
    low: int                  # index of the newest release known to look like --good
    high: int                 # index of the oldest release after it known to look like --bad

    def open(self) -> bool:
        return self.high - self.low > 1


@dataclass
class CaseSearch:
    """The search for one case: its records by release, its kinds' intervals."""
    case_id: str
    file: str
    line: list[str]
    records: dict[str, dict]
    kinds: list[KindSearch]
    untestable: dict[str, str] = field(default_factory=dict)  # release → why

    def changed(self, kind: str, release: str) -> bool | None:
        """Whether the case on `release` shows `kind` changed from --good; None: not comparable."""
        record = self.records[release]
        changes = diff.case_changes(self.records[self.line[0]], record)
        if any(k == "not comparable" for k, _ in changes):
            return None
        return any(k == kind for k, _ in changes)

    def candidates(self, kind: KindSearch) -> list[int]:
        return [i for i in range(kind.low + 1, kind.high) if self.line[i] not in self.untestable]

    def learn(self, release: str) -> None:
        """Narrow every open interval that holds `release` by its record."""
        index = self.line.index(release)
        for kind in self.kinds:
            if not kind.low < index < kind.high:
                continue
            looks_bad = self.changed(kind.kind, release)
            if looks_bad is None:
                self.untestable[release] = "not comparable there (" + diff.incomparable(self.records[release]) + ")"
            elif looks_bad:
                kind.high = index
            else:
                kind.low = index

    def settled(self) -> bool:
        return not any(self.candidates(kind) for kind in self.kinds)


def midpoint(search: CaseSearch, kind: KindSearch, ready: set[str]) -> int | None:
    """The release to try next for `kind`: the middle candidate, or a built one near it
    (within the middle half of the interval)."""
    candidates = search.candidates(kind)
    if not candidates:
        return None
    middle = (kind.low + kind.high) / 2
    quarter = (kind.high - kind.low) / 4
    built = [i for i in candidates if search.line[i] in ready and abs(i - middle) <= quarter]
    return min(built or candidates, key=lambda i: (abs(i - middle), i))


def step_text(search: CaseSearch, kind: KindSearch) -> str:
    """The change at the adjacent pair, in diff's words (its own texts between those two
    releases where both ran, else those between --good and --bad)."""
    before, after = search.records.get(search.line[kind.low]), search.records.get(search.line[kind.high])
    if before is not None and after is not None:
        texts = [t for k, t in diff.case_changes(before, after) if k == kind.kind]
        if texts:
            return "; ".join(texts)
    return "; ".join(kind.texts)


def finding(search: CaseSearch, kind: KindSearch) -> dict:
    """What the search found for one kind: the adjacent pair and what changed there."""
    skipped = [search.line[i] for i in range(kind.low + 1, kind.high)]
    good, bad = search.line[kind.low], search.line[kind.high]
    return {"case_id": search.case_id, "file": search.file, "kind": kind.kind, "good": good, "bad": bad,
            "adjacent": not skipped, "untested": {v: search.untestable.get(v, "") for v in skipped},
            "change": step_text(search, kind)}


def finding_line(found: dict) -> str:
    where = f"changed between {found['good']} and {found['bad']}"
    if not found["adjacent"]:
        where += " (untested between them: " + ", ".join(f"{v}: {why}" for v, why in found["untested"].items()) + ")"
    return f"{found['case_id']}: {where}: {found['kind']} {found['change']}"


# --------------------------------------------------------------------------- probes

@dataclass
class Prober:
    """Runs cases on a release in its environment, into OUT/runs/<release>/."""
    out: Path
    store: str
    log: object = print
    workers: str = "2"
    extra: list[str] = field(default_factory=list)
    broken: dict[str, str] = field(default_factory=dict)  # release → why it cannot be tested
    runs: list[dict] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)  # a scenario file (resolved) → why it was not collected
    variants: int = 0  # scenario variants written so far (harness.deploy.attribute numbers them)

    def run(self, release: str, node_ids: list[str], name: str | None = None) -> dict[str, dict] | None:
        """case id → record of `release`; None when the release cannot be tested (named)."""
        if release in self.broken:
            return None
        try:
            python = matrix.ensure_env(release, self.log)
        except (subprocess.CalledProcessError, OSError) as exc:
            python, why = None, f"its environment could not be built ({exc})"
        else:
            why = "no Python it supports on this machine"
        if python is None:
            self.broken[release] = why
            self.log(f"[bisect] Spark {release}: skipped, {why}")
            return None
        report_dir = self.out / "runs" / (name or release)
        shutil.rmtree(report_dir, ignore_errors=True)  # a report folder keeps earlier runs' records
        started = time.perf_counter()
        code = _pytest(release, python, node_ids, report_dir, self.store, self.workers, self.extra)
        seconds = round(time.perf_counter() - started, 1)
        results = report_dir / release / RESULTS
        if code not in (0, 1) or not results.exists():
            self.broken[release] = f"its run ended with exit {code} (see {report_dir})"
            self.log(f"[bisect] Spark {release}: skipped, {self.broken[release]}")
            return None
        self.runs.append({"release": release, "cases": len(node_ids), "seconds": seconds, "name": name or release})
        asked = f"{len(node_ids)} case(s)" if any("::" in n for n in node_ids) else " ".join(node_ids)
        self.log(f"[bisect] Spark {release}: {asked} in {seconds} s")
        document = json.loads(results.read_text(encoding="utf-8"))
        for entry in document.get("invalid") or []:
            self.refused[str(project.find().path(entry["file"]).resolve())] = entry["message"]
        return {c["case_id"]: c for c in document["cases"]}


def _pytest(release: str, python: Path, node_ids: list[str], report_dir: Path, store: str, workers: str,
            extra: list[str]) -> int:
    """The cases `node_ids` name (`file::case id`, or a folder), run as the files that hold
    them with only those cases kept (`--case-ids`): a file this release refuses is one
    collection error in results.json, not the end of the run."""
    env, plugin = matrix.pytest_env(release, python, workers)
    report_dir.mkdir(parents=True, exist_ok=True)
    files = list(dict.fromkeys(n.split("::", 1)[0] for n in node_ids))
    selection = []
    if any("::" in n for n in node_ids):
        listed = report_dir / "case-ids.txt"
        atomic_write_text(listed, "\n".join(n.split("::", 1)[1] for n in node_ids if "::" in n) + "\n")
        selection = ["--case-ids", str(listed)]
    command = [str(python), "-m", "pytest", *plugin, *files, *selection, "--continue-on-collection-errors",
               "-n", "auto", "-q", "-p", "no:cacheprovider", "--report-dir", str(report_dir), "--no-merged-page",
               "--store", store, *extra]
    with open(report_dir / "pytest.log", "w") as out:
        return subprocess.run(command, cwd=project.find().root, env=env, stdout=out, stderr=subprocess.STDOUT).returncode


def node_id(record: dict) -> str:
    return f"{record['file']}::{record['case_id']}"


# --------------------------------------------------------------------------- the search

def searches_of(good_results: dict, bad_results: dict, line: list[str], wanted=None) -> list[CaseSearch]:
    """A search per case that differs between the two results (`wanted`: case id → bool)."""
    bad_cases = {c["case_id"]: c for c in bad_results["cases"]}
    found = []
    for record in good_results["cases"]:
        after = bad_cases.get(record["case_id"])
        if after is None or (wanted is not None and not wanted(record)):
            continue
        texts: dict[str, list[str]] = {}
        for kind, text in diff.case_changes(record, after):
            texts.setdefault(kind, []).append(text)
        if not texts or any(k in texts for k in UNSEARCHED):
            continue
        kinds = [KindSearch(kind, words, 0, len(line) - 1) for kind, words in texts.items()]
        found.append(CaseSearch(record["case_id"], record["file"], line,
                                {line[0]: record, line[-1]: after}, kinds))
    return found


def search(searches: list[CaseSearch], prober: Prober, log=print) -> None:
    """Probe releases until every case's every kind lies between two adjacent releases
    (untestable ones aside)."""
    while True:
        ready = matrix.built_versions()
        wants: dict[str, set[str]] = {}
        for case in searches:
            for kind in case.kinds:
                index = midpoint(case, kind, ready)
                if index is not None:
                    wants.setdefault(case.line[index], set()).add(case.case_id)
        if not wants:
            return
        release = max(wants, key=lambda v: (len(wants[v]), v in ready, v))
        # every case with an interval holding it learns from the run, not only those that chose it
        asked = [c for c in searches if release not in c.records and release not in c.untestable
                 and any(k.low < c.line.index(release) < k.high for k in c.kinds if release in c.line)]
        records = prober.run(release, [node_id(c.records[c.line[0]]) for c in asked])
        for case in asked:
            record = (records or {}).get(case.case_id)
            if record is None:
                case.untestable[release] = prober.broken.get(release, "the case did not run there")
                continue
            case.records[release] = record
            case.learn(release)


def results_of(report_dir: Path, release: str) -> dict | None:
    """A release's results in a report folder: REPORT_DIR/<release>/results.json, or the
    folder's own results.json (a version's folder given as is) when it is that release's."""
    for path in (report_dir / release / RESULTS, report_dir / RESULTS):
        if path.exists():
            document = json.loads(path.read_text(encoding="utf-8"))
            if path.parent.name == release or (document.get("versions") or {}).get("spark") == release:
                return document
    return None


def bisect(paths: list[str], good: str, bad: str, prober: Prober, report_root: Path, log=print,
           known: list[str] | None = None, folders: dict | None = None) -> dict:
    """The search: the results of --good and --bad (from the report folder, else run over
    `paths`), a search per changed case; the document `save` writes."""
    line = releases.between(good, bad, known if known is not None else releases.releases(log=log))
    ends = {}
    for release in (good, bad):
        ends[release] = results_of((folders or {}).get(release) or report_root, release)
        if ends[release] is None:
            log(f"[bisect] no results of Spark {release} in {report_root}: running {' '.join(paths) or 'scenarios'} on it")
            records = prober.run(release, list(paths) or [str(p) for p in project.find().scenario_paths()], name=f"{release}-all")
            if records is None:
                raise BisectError(f"Spark {release} cannot be run: {prober.broken[release]}")
            ends[release] = {"cases": list(records.values())}
    searches = searches_of(ends[good], ends[bad], line, wanted=_selection(paths))
    log(f"[bisect] {len(searches)} case(s) differ between {good} and {bad}; {len(line) - 2} release(s) between them")
    started = time.perf_counter()
    search(searches, prober, log)
    findings = [finding(case, kind) for case in searches for kind in case.kinds]
    return {"good": good, "bad": bad, "line": line, "findings": findings,
            "untestable": prober.broken, "probes": prober.runs,
            "seconds": round(time.perf_counter() - started, 1),
            "cases": {case.case_id: {"file": case.file, "records": {v: _summary(r) for v, r in case.records.items()}}
                      for case in searches},
            # not written: every record a search read, for attribution and the report
            "_records": {case.case_id: case.records for case in searches}}


def main(paths: list[str], good: str, bad: str, report_dir: str = "reports", out: str | None = None,
         store: str | None = None, workers: str = "2", attribution: bool = True, write: bool = False,
         max_variants: int | None = None, good_dir: str | None = None, bad_dir: str | None = None,
         log=print) -> int:
    """`python -m harness bisect`: search, attribute, write OUT/bisect.json and the report."""
    from harness.deploy import attribute
    from harness.report import upgrade
    report_root = Path(report_dir).resolve()
    out_dir = Path(out).resolve() if out else report_root / f"upgrade-{good}-{bad}"
    store = str(Path(store).resolve()) if store else str(report_root.parent / ".harness-cache")
    prober = Prober(out_dir, store, log, workers)
    try:
        folders = {release: Path(folder).resolve() for release, folder in ((good, good_dir), (bad, bad_dir)) if folder}
        document = bisect(paths, good, bad, prober, report_root, log, folders=folders)
    except (BisectError, releases.ReleaseError) as exc:
        log(f"error: {exc}")
        return 2
    if attribution and document["findings"]:
        started = time.perf_counter()
        attribute.attribute(document, prober, log, max_variants or attribute.MAX_VARIANTS)
        document["attribution_seconds"] = round(time.perf_counter() - started, 1)
    document["probes"] = prober.runs
    if write:  # a bug file's affected range, as measured
        from harness.report import bug_range
        document["written"] = bug_range.write_measured(document["findings"], document["_records"])
    save(document, out_dir)
    written = upgrade.write(document, out_dir)
    for found in document["findings"]:
        print(finding_line(found))
        for restoring in (found.get("attribution") or {}).get("restored_by", []):
            print("    " + upgrade.restoring_words(restoring))
    if not document["findings"]:
        print(f"no case differs between {good} and {bad}" + (f" in {' '.join(paths)}" if paths else ""))
    from harness.report import merged
    if any(report_root.glob("*/results.json")):
        written.append(merged.write_merged(report_root))  # the matrix page links the report
    log(f"[bisect] written: {', '.join(str(p) for p in written if p)}")
    return 0


def save(document: dict, out_dir: Path) -> Path:
    """OUT/bisect.json, written whole (what is kept in memory only left out)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "bisect.json"
    atomic_write_text(path, json.dumps({k: v for k, v in document.items() if not k.startswith("_")}, indent=1) + "\n")
    return path


def _summary(record: dict) -> dict:
    return {"status": record["status"], "ran_at": record.get("ran_at")}


def _selection(paths: list[str]):
    """Which cases `paths` (files or folders, as given on the command line) select."""
    if not paths:
        return None
    roots = [Path(p).resolve() for p in paths]

    def wanted(record: dict) -> bool:
        file = project.find().path(record["file"]).resolve()
        return any(file == root or root in file.parents for root in roots)
    return wanted
