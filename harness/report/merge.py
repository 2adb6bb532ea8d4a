"""`python -m harness merge DIR ... [--into reports]`: report folders made anywhere (one per
Spark version, or the shards of one version) into one report folder: results.json and
the page per version, summary.md, the merged cross-version page and the upgrade diff.

Refused, in one line naming the folder: a folder that is not a report, results of
another harness release, shards of different splits or with one missing, and two
folders that disagree on a case (same case, different status or answer)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import harness
from harness.core.files import atomic_write_text
from harness.core.vocab import spark_version
from harness.report import diff, merged, summary, version_report

UPGRADE_DIFF = "upgrade-diff.txt"


class MergeRefused(Exception):
    """One line: which folder, and why it cannot be merged."""


@dataclass
class Part:
    folder: Path     # as given on the command line
    path: Path       # its results.json
    results: dict

    @property
    def version(self) -> str:
        return self.results["versions"]["spark"]

    @property
    def shard(self) -> dict | None:
        return self.results.get("shard")


def read_folder(folder: Path) -> list[Part]:
    """The results of a report folder (<folder>/<version>/results.json) or a version folder."""
    if not folder.is_dir():
        raise MergeRefused(f"{folder}: not a folder")
    paths = [folder / "results.json"] if (folder / "results.json").is_file() else sorted(folder.glob("*/results.json"))
    if not paths:
        raise MergeRefused(f"{folder}: not a report folder (no results.json in it, nor in a version folder in it)")
    parts = []
    for path in paths:
        try:
            results = json.loads(path.read_text(encoding="utf-8"))
            version_report.validate_results(results)
        except (OSError, ValueError) as exc:
            raise MergeRefused(f"{path}: not readable results ({type(exc).__name__}: "
                               f"{str(exc).splitlines()[0][:200]})") from None
        except version_report.ResultsInvalid as exc:
            raise MergeRefused(f"{path}: not results of this harness ({str(exc).splitlines()[0][:200]})") from None
        release = (results.get("harness") or {}).get("release")
        if release != harness.__version__:
            raise MergeRefused(f"{path}: written by harness {release or 'before 0.3.0'}, this is "
                               f"{harness.__version__}: merge only results of one release (run the suite again)")
        parts.append(Part(folder, path, results))
    return parts


def _check_shards(version: str, parts: list[Part]) -> None:
    sharded = [p for p in parts if p.shard]
    if not sharded:
        return
    first = sharded[0]
    for part in sharded[1:]:
        if (part.shard["count"], part.shard["split"]) != (first.shard["count"], first.shard["split"]):
            raise MergeRefused(f"{part.path}: shard {part.shard['index']}/{part.shard['count']} of another split of "
                               f"the suite than {first.path} (shards must be cut from the same durations: give "
                               "every shard the same --store, or none)")
    missing = sorted(set(range(1, first.shard["count"] + 1)) - {p.shard["index"] for p in sharded})
    if missing:
        raise MergeRefused(f"{first.folder}: Spark {version}: shard {', '.join(map(str, missing))} of "
                           f"{first.shard['count']} missing (merge every shard, or run the missing one)")


def _answer(record: dict) -> tuple:
    """What two runs of one case must agree on: the verdict and Spark's answer."""
    observed = record.get("observed") or {}
    if record["kind"] == "agreement":
        return record["status"], tuple(observed.get("strategies") or ()), tuple(
            (r.get("forced"), r.get("rows"), r.get("checksum"), bool(r.get("error"))) for r in observed.get("agreement") or ())
    if record["kind"] == "partitions":
        found = observed.get("partitions") or {}
        return record["status"], found.get("query_rows"), found.get("query_checksum"), tuple(
            (part["rows"], part["checksum"]) for part in found.get("parts") or ())
    tops = tuple((version_report.top_join(record, which) or {}).get("strategy") for which in ("initial", "final"))
    return record["status"], observed.get("rows"), observed.get("checksum"), tops


def _records(version: str, parts: list[Part]) -> tuple[list[dict], list[dict]]:
    records: dict[str, tuple[Part, dict]] = {}
    invalid: dict[str, dict] = {}
    for part in parts:
        for record in part.results["cases"]:
            seen = records.get(record["case_id"])
            if seen is not None and _answer(seen[1]) != _answer(record):
                raise MergeRefused(f"{part.path}: Spark {version}: {record['case_id']} is {record['status']} here "
                                   f"but {seen[1]['status']} in {seen[0].path} (the folders disagree on it)")
            if seen is None or (record.get("ran_at") or "") > (seen[1].get("ran_at") or ""):
                records[record["case_id"]] = (part, record)
        for bad in part.results.get("invalid") or []:
            invalid.setdefault(bad["file"], bad)
    return [record for _, record in records.values()], list(invalid.values())


def merge(folders: list[Path], into: Path) -> list[Path]:
    """Write the merged report folder; the files written."""
    by_version: dict[str, list[Part]] = {}
    for folder in folders:
        for part in read_folder(folder):
            by_version.setdefault(part.version, []).append(part)
    merged_records = {}
    for version, parts in by_version.items():
        _check_shards(version, parts)
        merged_records[version] = _records(version, parts)
    written = []
    for version in sorted(merged_records, key=spark_version):
        records, invalid = merged_records[version]
        written += version_report.write_reports(into, records, invalid, keep_previous=False, version=version)
        written.append(summary.write_summary(into, version))
    page = merged.write_merged(into)
    if page is not None:
        written.append(page)
    written.append(write_upgrade_diff(into, sorted(merged_records, key=spark_version)))
    return [path for path in written if path is not None]


def write_upgrade_diff(into: Path, versions: list[str]) -> Path:
    """What changed between each pair of consecutive versions, as `python -m harness diff` says it."""
    texts = [diff.format_diff(old, new, diff.diff_results(diff.load_results(into, old), diff.load_results(into, new)))
             for old, new in zip(versions, versions[1:])]
    path = Path(into) / UPGRADE_DIFF
    atomic_write_text(path, "\n\n".join(texts) + "\n" if texts else "one Spark version: nothing to compare\n")
    return path


def main(folders: list[str], into: str) -> int:
    try:
        written = merge([Path(f) for f in folders], Path(into))
    except MergeRefused as exc:
        print(f"merge refused: {exc}")
        return 2
    for path in written:
        print(f"  {path}")
    return 0
