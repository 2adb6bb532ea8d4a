"""Accept what Spark did: write observed strategies and results into the scenario files.

`python -m harness accept [VERSIONS] [-k TEXT]` (or `make accept`, or `pytest --accept`)
reads reports/<version>/results.json for each version and, for every case whose
expectation differs from what that version observed (or that has none), edits the
scenario's `expect:` so it holds again:

- one value seen on every version and every case of the file → the base expectation;
- one value for one matrix case on every version → an override naming that case;
- values that differ by version → an override per run of versions, bounded by the
  neighbouring versions that were run (`spark: ">3.4.4"`): the change happened after
  the last version that still behaved the old way.

Strategy, build side, rows and checksum are accepted, and the join nodes (`joins`: each
node's strategy, build side, join type and tables) of a plan with more than one join, or
of a file that lists them. The YAML round-trips
through ruamel.yaml so comments and layout survive; every edited file is validated
and re-checked against every version's observations before it is written, and the
unified diff is printed for review. What still fails afterwards (errors, warnings,
multi-join lists) is listed: edit it by hand or file it as a bug scenario.
"""
from __future__ import annotations

import difflib
import io
import itertools
from dataclasses import dataclass, field
from pathlib import Path

from harness.check import expect
from harness.check.compare_plans import compare_plan
from harness.core import project
from harness.core.files import atomic_write_text
from harness.core.records import Observation
from harness.core.text import display_path
from harness.core.vocab import version_sort_key, written_join_node
from harness.report.diff import load_results
from harness.report.version_report import top_join
from harness.scenario.errors import ScenarioError
from harness.scenario.model import Case, expand, load_scenario

ACCEPTED_KEYS = ("strategy", "build_side", "joins", "rows", "checksum", "columns")
# Beside the accepted values: the observed join nodes as the record holds them.
OBSERVED_JOINS = "observed_joins"


@dataclass
class FilePlan:
    """What accept will change in one scenario file."""
    path: Path
    cases: dict[str, Case]
    observed: dict[str, dict[str, dict]] = field(default_factory=dict)   # case id → version → values
    records: dict[str, dict[str, dict]] = field(default_factory=dict)    # case id → version → record

    @property
    def expect_block(self) -> dict:
        return next(iter(self.cases.values())).scenario.data["expect"]


def observed_values(record: dict) -> dict | None:
    """The acceptable values a record observed; None after an error or when plan: both
    saw two different plans (nothing one value could express)."""
    observed = record["observed"]
    if observed.get("error"):
        return None
    mode = record["expected"].get("plan", "initial")
    initial, final = top_join(record, "initial"), top_join(record, "final")
    if mode == "both" and observed.get("final") and _plan_of(initial) != _plan_of(final):
        return None
    which = "final" if mode == "final" and observed.get("final") else "initial"
    top = final if which == "final" else initial
    values = {"strategy": top["strategy"] if top else "none"}
    if top is not None:
        values["build_side"] = top["build_side"]
    joins = (observed.get(which) or {}).get("joins") or []
    values["joins"] = [written_join_node(j) for j in joins]
    values[OBSERVED_JOINS] = joins
    if observed.get("executed"):
        values["rows"], values["checksum"] = observed.get("rows"), observed.get("checksum")
    if observed.get("columns") is not None:
        values["columns"] = [list(column) for column in observed["columns"]]
    return values


def _plan_of(node: dict | None) -> tuple:
    return (node["strategy"], node["build_side"]) if node else ("none", "none")


def _wanted(resolved: dict, values: dict) -> dict:
    """key → observed value, for each accepted key the resolved expectation gets wrong.
    A file that asserts nothing gets the top join's strategy, or every join node when the
    plan has more than one."""
    if not expect.has_assertions(resolved):
        chain = len(values.get("joins", [])) > 1
        keys = ("joins", "rows", "checksum", "columns") if chain else tuple(k for k in ACCEPTED_KEYS if k != "joins")
        return {k: values[k] for k in keys if k in values}
    wanted = {k: values[k] for k in ACCEPTED_KEYS if k in resolved and k in values and k != "joins"
              and resolved[k] != values[k]}
    if "joins" in resolved and compare_plan({"joins": resolved["joins"]}, values[OBSERVED_JOINS], "the"):
        wanted["joins"] = values["joins"]
    if "strategy" in wanted and "build_side" in values:
        wanted["build_side"] = values["build_side"]  # an override's strategy drops the base build side
    return wanted


def case_selector(case: Case) -> dict:
    """The `when:` keys that pick out exactly this matrix case."""
    selector = {k: v for k, v in case.params.items() if k in ("join_type", "api", "left_hints", "right_hints")}
    if case.params.get("conf"):
        selector["conf"] = dict(case.params["conf"])
    return selector


def _axes(case: Case) -> dict:
    """A case's matrix values as flat axes: join_type, api, left_hints, right_hints, conf:<key>."""
    selector = case_selector(case)
    flat = {k: v for k, v in selector.items() if k != "conf"}
    flat.update({f"conf:{k}": v for k, v in selector.get("conf", {}).items()})
    return flat


def _as_when(axes: dict) -> dict:
    when = {k: v for k, v in axes.items() if not k.startswith("conf:")}
    conf = {k[5:]: v for k, v in axes.items() if k.startswith("conf:")}
    return {**when, **({"conf": conf} if conf else {})}


def fewest_selectors(cases: dict[str, Case], chosen: list[str]) -> list[dict]:
    """The fewest `when:` selectors that pick out exactly the chosen cases of a file: the
    axes that matter, not every matrix value (e.g. {join_type: full_outer} for all six
    spellings of a hint on full outer joins)."""
    if len(chosen) == len(cases):
        return [{}]
    flat = {case_id: _axes(case) for case_id, case in cases.items()}
    names = sorted({axis for axes in flat.values() for axis in axes})
    best = [_as_when(flat[c]) for c in chosen]
    for size in range(1, len(names) + 1):
        for subset in itertools.combinations(names, size):
            def project(case_id):
                return tuple(repr(flat[case_id].get(axis)) for axis in subset)
            wanted = {project(c) for c in chosen}
            if all((project(c) in wanted) == (c in chosen) for c in cases) and len(wanted) < len(best):
                seen, selectors = set(), []
                for c in chosen:
                    if project(c) not in seen:
                        seen.add(project(c))
                        selectors.append(_as_when({axis: flat[c][axis] for axis in subset if axis in flat[c]}))
                best = selectors
        if len(best) == 1:
            break
    return best


def version_spec(run: list[str], ran: list[str], anchored: bool) -> str | None:
    """A specifier for a run of consecutive versions, bounded by the versions around it
    (and, when anchored, by its own first version if none was run below it)."""
    first, last = ran.index(run[0]), ran.index(run[-1])
    lower = [f">{ran[first - 1]}"] if first > 0 else ([f">={run[0]}"] if anchored else [])
    upper = [f"<{ran[last + 1]}"] if last + 1 < len(ran) else []
    return ",".join(lower + upper) or None


def plan_edits(plan: FilePlan) -> tuple[dict, list[tuple[dict, dict]]]:
    """(base key → value, [(when, key → value)]) that make every case hold on every version."""
    wanted: dict[str, dict[str, dict]] = {}   # case id → version → key → value
    for case_id, by_version in plan.observed.items():
        case = plan.cases[case_id]
        for version, values in by_version.items():
            keys = _wanted(expect.resolve(case, version), values)
            if keys:
                wanted.setdefault(case_id, {})[version] = keys
    base = _base_edits(plan, wanted)
    # Overrides must not reach below the versions measured when the base cannot take the
    # value (scoped base, or other overrides already set the key).
    anchored = "spark" in plan.expect_block or bool(plan.expect_block.get("overrides"))
    groups: dict[tuple, tuple[dict, list[str]]] = {}   # (spec, values) → (values, case ids)
    for case_id, by_version in wanted.items():
        ran = sorted(plan.observed[case_id], key=version_sort_key)
        rest = {v: {k: x for k, x in keys.items() if k not in base} for v, keys in by_version.items()}
        for run, values in _runs(ran, {v: keys for v, keys in rest.items() if keys}):
            spec = version_spec(run, ran, anchored)
            groups.setdefault((spec, repr(values)), (values, []))[1].append(case_id)
    overrides: dict[str, dict] = {}
    for (spec, _), (values, case_ids) in groups.items():
        for selector in fewest_selectors(plan.cases, case_ids):
            when = {**selector, **({"spark": spec} if spec else {})}
            if not when:
                base.update(values)
                continue
            overrides.setdefault(repr(when), {"when": when, "values": {}})["values"].update(values)
    return base, [(o["when"], o["values"]) for o in overrides.values()]


def _runs(ran: list[str], values: dict[str, object]) -> list[tuple[list[str], object]]:
    """Maximal runs of consecutive versions (in `ran`) wanting the same values."""
    runs: list[tuple[list[str], object]] = []
    for version in ran:
        if version not in values:
            continue
        previous = runs[-1] if runs else None
        if previous and previous[1] == values[version] and ran.index(previous[0][-1]) == ran.index(version) - 1:
            previous[0].append(version)
        else:
            runs.append(([version], values[version]))
    return runs


def _base_edits(plan: FilePlan, wanted: dict) -> dict:
    """Keys whose one observed value holds for every case on every version: set in the base."""
    expect_block = plan.expect_block
    if "spark" in expect_block or len(plan.observed) < len(plan.cases):
        return {}
    base = {}
    for key in ACCEPTED_KEYS:
        if not any(key in keys for by_version in wanted.values() for keys in by_version.values()):
            continue
        seen = [values.get(key) for by_version in plan.observed.values() for values in by_version.values()]
        overridden = any(key in o for o in expect_block.get("overrides", []))
        if not overridden and None not in seen and all(v == seen[0] for v in seen):
            base[key] = seen[0]
    return base


# --------------------------------------------------------------------------- YAML edits

def round_trip_yaml():
    from ruamel.yaml import YAML
    yaml = YAML()  # round-trip; its loader builds only plain data and comment-carrying containers
    yaml.preserve_quotes = True
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


def _flow(mapping: dict):
    from ruamel.yaml.comments import CommentedMap
    flow = CommentedMap()
    for key, value in mapping.items():
        flow[key] = _flow(value) if isinstance(value, dict) else _scalar(key, value)
    flow.fa.set_flow_style()
    return flow


def apply_edits(text: str, base: dict, overrides: list[tuple[dict, dict]]) -> str:
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    yaml = round_trip_yaml()
    doc = yaml.load(text)
    block = doc["expect"]
    for key, value in base.items():
        if key in block:
            block[key] = _scalar(key, value)
        else:
            position = list(block).index("overrides") if "overrides" in block else len(block)
            block.insert(position, key, _scalar(key, value))
    if overrides:
        if "overrides" not in block:
            block["overrides"] = CommentedSeq()
        existing = block["overrides"]
        for when, values in overrides:
            entry = next((o for o in existing if _plain(o["when"]) == when), None)
            if entry is None:
                entry = CommentedMap()
                entry["when"] = _flow(when)
                existing.append(entry)
            for key in ACCEPTED_KEYS:
                if key in values:
                    entry[key] = _scalar(key, values[key])
    out = io.StringIO()
    yaml.dump(doc, out)
    return out.getvalue()


def _scalar(key: str, value):
    if key == "joins":  # one flow mapping per node, a node per line
        from ruamel.yaml.comments import CommentedSeq
        return CommentedSeq(_flow(node) for node in value)
    if key in ("checksum", "spark"):  # hex digits can read as a number ("12e4..."); specifiers start with < or >
        from ruamel.yaml.scalarstring import DoubleQuotedScalarString
        return DoubleQuotedScalarString(value)
    return value


def _plain(value):
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


# --------------------------------------------------------------------------- driver

def _scenario_path(record: dict) -> Path:
    path = Path(record["file"])
    if path.is_absolute():
        return path
    return path if path.exists() else project.find().path(path)


def gather(report_dir: str, versions: list[str], keyword: str | None) -> dict[Path, FilePlan]:
    plans: dict[Path, FilePlan] = {}
    for version in versions:
        for record in load_results(report_dir, version)["cases"]:
            if record["kind"] != "case" or (keyword and keyword not in record["case_id"]):
                continue
            path = _scenario_path(record).resolve()
            if path not in plans:
                try:
                    cases = expand(load_scenario(path))
                except (ScenarioError, OSError) as exc:
                    print(f"accept: skipped {path}: {exc}")
                    plans[path] = FilePlan(path=path, cases={})
                    continue
                # a synthetic twin's observations are not the file's expectations
                plans[path] = FilePlan(path=path, cases={c.case_id: c for c in cases if c.scenario.twin_of is None})
            plan = plans[path]
            if record["case_id"] not in plan.cases:
                continue  # the file changed since that run
            plan.records.setdefault(record["case_id"], {})[version] = record
            values = observed_values(record)
            if values is not None:  # errors and unsettled plans stay for a person to read
                plan.observed.setdefault(record["case_id"], {})[version] = values
    return plans


def remaining_problems(path: Path, plan: FilePlan) -> list[str]:
    """What still fails on the recorded observations once the file is as it now reads."""
    cases = {c.case_id: c for c in expand(load_scenario(path))}
    problems = []
    for case_id, by_version in plan.records.items():
        for version, record in by_version.items():
            resolved = expect.resolve(cases[case_id], version)
            if not expect.has_assertions(resolved):
                continue
            for problem in expect.compare(resolved, Observation.from_json(record["observed"])):
                problems.append(f"{case_id} on {version}: {problem}")
    return problems


def accept_file(plan: FilePlan, write: bool) -> tuple[str, list[str]]:
    """(unified diff, problems left) for one file; writes it when asked and consistent."""
    original = plan.path.read_text(encoding="utf-8")
    base, overrides = plan_edits(plan)
    if not plan.cases:
        return "", []
    if not base and not overrides:
        return "", remaining_problems(plan.path, plan)
    edited = apply_edits(original, base, overrides)
    rel = display_path(plan.path)
    patch = "".join(difflib.unified_diff(original.splitlines(True), edited.splitlines(True), f"{rel} (before)", f"{rel} (accepted)"))
    scratch = plan.path.with_name(f".{plan.path.name}.accept")
    try:
        scratch.write_text(edited, encoding="utf-8")
        problems = remaining_problems(scratch, plan)  # validates the edited file too
    except ScenarioError as exc:
        return patch, [f"edit rejected, file left unchanged: {exc}"]
    finally:
        scratch.unlink(missing_ok=True)
    if write:
        atomic_write_text(plan.path, edited)
    return patch, problems


def main(versions: list[str], report_dir: str = "reports", keyword: str | None = None, write: bool = True) -> int:
    if not versions:
        versions = sorted((p.parent.name for p in Path(report_dir).glob("*/results.json")), key=version_sort_key)
    if not versions:
        print(f"accept: no results under {report_dir}/ (run the suite first)")
        return 2
    print(f"accept: observations of Spark {', '.join(versions)}" + (f", cases matching '{keyword}'" if keyword else ""))
    changed, left = 0, []
    for path, plan in sorted(gather(report_dir, versions, keyword).items()):
        patch, problems = accept_file(plan, write)
        if patch:
            changed += 1
            print(patch, end="" if patch.endswith("\n") else "\n")
        left += problems
    verb = "changed" if write else "would change"
    print(f"accept: {verb} {changed} file(s)")
    if left:
        print(f"accept: {len(left)} observation(s) still differ; edit by hand or file a bug scenario:")
        for line in left:
            print(f"  {line}")
    return 0
