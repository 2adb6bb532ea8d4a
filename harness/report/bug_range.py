"""A bug file's `affected` range from what `bisect` measured (`bisect --write`).

A bug file's expectations describe the correct behaviour, so on a release a case shows the
bug when it is `known_bug` (declared affected and wrong) or `failed` on a release not
declared affected; it is clean when it passes, or fails only because it was declared
affected and behaved correctly. Where the case flips between two adjacent releases, the
range is checked: the release that shows the bug must be in it, the clean one outside.
When it is not, the bound next to the flip is moved to it (`<4.0.0` when 3.5.9 shows the
bug and 4.0.0 does not; `>=3.4.1` when 3.4.0 is clean and 3.4.1 shows it), the file is
edited as `accept` edits one (comments and layout kept, validated before it is written),
and a comment on the line says what was measured. A change that would need more than one
bound moved is listed for a person.
"""
from __future__ import annotations

import re

from packaging.specifiers import SpecifierSet

from harness.core import project
from harness.core.files import atomic_write_text
from harness.core.vocab import spark_version

BUG_CLEAN_FAILURE = "declared affected by"


def shows_bug(record: dict) -> bool | None:
    """Whether a bug file's case shows its bug on that record's release; None: cannot say."""
    status, message = record["status"], record.get("message") or ""
    if status == "known_bug":
        return True
    if status == "passed":
        return False
    if status == "failed":
        return not message.startswith(BUG_CLEAN_FAILURE)
    return None


def _contains(affected, version: str) -> bool:
    entries = affected if isinstance(affected, list) else [affected]
    return any(SpecifierSet(e).contains(spark_version(version), prereleases=True) for e in entries)


def _with_bound(entry: str, operator: str, version: str) -> str:
    """`entry` with its upper (`<`) or lower (`>=`) bound replaced by one at `version`."""
    kept = [c.strip() for c in entry.split(",") if c.strip()
            and not re.match(r"^<" if operator == "<" else r"^>", c.strip())]
    return ",".join(kept + [f"{operator}{version}"])


def _lower(entry: str):
    found = [spark_version(c.strip().lstrip(">=")) for c in entry.split(",") if c.strip().startswith(">")]
    return max(found) if found else spark_version("0")


def _nearest(entries: list[str], buggy: str, fixed_later: bool) -> list[int]:
    """The range a release outside every range belongs with: fixed later than declared,
    the nearest range starting at or below it; showing earlier, the nearest starting above."""
    at = spark_version(buggy)
    if fixed_later:
        below = [i for i, e in enumerate(entries) if _lower(e) <= at]
        return [max(below, key=lambda i: _lower(entries[i]))] if below else []
    above = [i for i, e in enumerate(entries) if _lower(e) > at]
    return [min(above, key=lambda i: _lower(entries[i]))] if above else []


def measured_affected(affected, buggy: str, clean: str) -> tuple[object, str]:
    """(the new `affected` or None, what was done in words) for a bug seen on `buggy` and
    not on the adjacent `clean` release."""
    entries = list(affected) if isinstance(affected, list) else [affected]
    if _contains(entries, buggy) and not _contains(entries, clean):
        return affected, "agrees"
    fixed_later = spark_version(clean) > spark_version(buggy)
    holding = [i for i, e in enumerate(entries) if _contains([e], buggy)] or _nearest(entries, buggy, fixed_later)
    if len(holding) != 1:
        return None, "needs a person (no single range holds the release that shows it)"
    operator, at = ("<", clean) if fixed_later else (">=", buggy)
    entries[holding[0]] = _with_bound(entries[holding[0]], operator, at)
    if not _contains(entries, buggy) or _contains(entries, clean):
        return None, "needs a person (more than one bound would move)"
    return (entries if isinstance(affected, list) else entries[0]), \
        f"{'upper' if fixed_later else 'lower'} bound moved to {operator}{at}"


def write_measured(findings: list[dict], records: dict, log=print) -> list[str]:
    """Check (and where needed, edit) the `affected` range of every bug file a finding's
    case belongs to; one line per file."""
    from harness.report.accept import round_trip_yaml
    from harness.scenario.errors import ScenarioError
    from harness.scenario.model import load_scenario
    lines = []
    for found in findings:
        before, after = (records[found["case_id"]].get(found[side]) for side in ("good", "bad"))
        if before is None or after is None or not before.get("bug"):
            continue
        flips = (shows_bug(before), shows_bug(after))
        if None in flips or flips[0] == flips[1]:
            continue
        buggy, clean = (found["good"], found["bad"]) if flips[0] else (found["bad"], found["good"])
        path = project.find().path(found["file"])
        yaml = round_trip_yaml()
        data = yaml.load(path.read_text(encoding="utf-8"))
        new, done = measured_affected(data["bug"]["affected"], buggy, clean)
        measured = f"{buggy} shows it, {clean} does not"
        if new is None or done == "agrees":
            lines.append(f"{found['file']}: affected {data['bug']['affected']!r} {done} ({measured})")
            continue
        data["bug"]["affected"] = new
        data["bug"].fa.set_block_style()  # a comment ends its line
        data["bug"].yaml_add_eol_comment(f"measured by bisect: {measured}", "affected")
        candidate = path.with_name(f".{path.stem}.bisect.yaml")  # beside it: its catalogs resolve
        with open(candidate, "w", encoding="utf-8") as out:
            yaml.dump(data, out)
        try:
            load_scenario(candidate)
            problem = None
        except ScenarioError as exc:
            problem = exc
        text = candidate.read_text(encoding="utf-8")
        candidate.unlink()
        if problem is not None:
            lines.append(f"{found['file']}: not written, the edit does not load ({problem})")
            continue
        atomic_write_text(path, text)
        lines.append(f"{found['file']}: affected {new!r}: {done} ({measured})")
    for line in dict.fromkeys(lines):
        log(line)
    return list(dict.fromkeys(lines))
