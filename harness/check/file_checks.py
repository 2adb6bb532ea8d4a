"""The items a scenario file gets beyond its cases, in one place: per join type, the
cross-strategy check (harness.check.agreement) and the ternary-partitioning check
(harness.check.partitions). Collection, the store, lost workers and the reports read the
list from here."""
from __future__ import annotations

from harness.check import agreement, partitions
from harness.scenario.model import Case

AGREEMENT, PARTITIONS = "agreement", "partitions"


def file_checks(cases: list[Case], reference: str = "on") -> list[tuple[str, Case, str]]:
    """(kind, case, item id) of each check, in the order they are collected; `reference`
    the run's mode (`off`: no partitions items)."""
    checks = []
    for case in agreement.agreement_representatives(cases):
        checks.append((AGREEMENT, case, agreement.agreement_id(case)))
        if reference != "off" and not partitions.nothing_to_partition(case):
            checks.append((PARTITIONS, case, partitions.partitions_id(case)))
    return checks


def nothing_to_compare(kind: str, case: Case) -> str | None:
    """Why a check compares nothing, decided from the file alone (no session needed)."""
    return agreement.nothing_to_compare(case) if kind == AGREEMENT else partitions.nothing_to_partition(case)


def lost_record(kind: str, case: Case, versions: dict, master: str | None, message: str):
    maker = agreement.lost_record if kind == AGREEMENT else partitions.lost_record
    return maker(case, versions, master, message)
