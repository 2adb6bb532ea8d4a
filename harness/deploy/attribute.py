"""Which config restores the earlier behaviour of a change `bisect` found.

For each finding (a case, a kind of change, the adjacent releases P and N where it
appears), the SQL configs whose default differs between P and N, or that N added, are
read from each release's own registry (`conf_keys.defaults_of`) and set, one at a time,
to the earlier behaviour: P's default, or for a boolean N added the other value. Each
setting is a variant of the case's scenario file (its `spark_conf` with that key) run on
the --bad release, all variants of a release in one pytest run. A setting restores the
finding when the variant no longer shows that kind of change against --good and shows no
change --bad did not show; it restores it exactly when the variant matches --good in
everything `diff` compares. Pairs are tried only where no single setting restores a
finding, and only among the settings that moved its observation at all.

Not tried, and said: static configs (a session sets them at start, a scenario never),
string configs (the harness lets a scenario set only the string configs it vetted), and
defaults that are not a value (`<undefined>`, `<value of ...>`).
"""
from __future__ import annotations

import itertools
import shutil
from dataclasses import dataclass
from pathlib import Path

from harness.core import project
from harness.deploy import conf_keys, matrix
from harness.report import diff

MAX_SINGLE_TRIES = 400   # per finding: more settings than this differ only between major releases
MAX_PAIR_TRIES = 60
# Variants (a case with one setting) run in one go; beyond, findings of one kind at one pair
# of releases share the first case's answer to which settings matter (measured: 145 executed
# variants in 25 s on 4.3.0, one pytest run).
MAX_VARIANTS = 3000


@dataclass(frozen=True)
class Setting:
    key: str
    value: str
    why: str      # e.g. "default true in 3.5.9, false from 4.0.0" or "added in 4.0.0, default true"
    doc: str = ""  # the first sentence of its documentation, as the later release's registry says it


def settings_between(before: dict, after: dict, earlier: str, later: str) -> tuple[list[Setting], dict[str, int]]:
    """(the settings that bring back `earlier`'s defaults on `later`, counts of the keys
    not tried by reason)."""
    settings, skipped = [], {"static": 0, "string": 0, "no value": 0}
    for key in sorted(after):
        new, old = after[key], before.get(key)
        if old is not None and old["default"] == new["default"]:
            continue
        if new["static"]:
            skipped["static"] += 1
            continue
        if new["kind"] == "string":
            skipped["string"] += 1
            continue
        if old is None:
            if new["kind"] != "boolean" or new["default"] not in ("true", "false"):
                skipped["no value"] += 1
                continue
            flipped = "false" if new["default"] == "true" else "true"
            settings.append(Setting(key, flipped, f"added in {later}, default {new['default']}", new.get("doc", "")))
            continue
        if "<" in old["default"] or old["default"] == "":
            skipped["no value"] += 1
            continue
        settings.append(Setting(key, old["default"], f"default {old['default']} in {earlier}, {new['default']} from {later}",
                                new.get("doc", "")))
    return settings, skipped


@dataclass
class Variant:
    case_id: str           # the case it varies
    settings: tuple        # the Settings it applies
    node_id: str


def write_variant(out: Path, record: dict, settings: tuple, number: int) -> Variant:
    """The case's scenario file with `settings` added to its spark_conf, under a new id,
    in OUT/tries/ where its catalogs are copied beside it (a round-trip edit: the file
    reads as the harness reads it, `on:` a key, not a boolean)."""
    from harness.report.accept import round_trip_yaml
    root = project.find().root
    source = root / record["file"]
    yaml = round_trip_yaml()
    data = yaml.load(source.read_text(encoding="utf-8"))
    scenario_id = str(data["id"])
    new_id = f"{scenario_id}__try{number}"
    data["id"] = new_id
    conf = data.get("spark_conf") or {}
    for setting in settings:
        conf[setting.key] = setting.value
    data["spark_conf"] = conf
    try:
        relative = source.parent.relative_to(root)  # scenarios/...: its catalogs stay inside a scenarios tree
    except ValueError:
        relative = Path("scenarios") / source.parent.name
    folder = out / "tries" / relative
    folder.mkdir(parents=True, exist_ok=True)
    for catalog in list(source.parent.glob("catalog.yaml")) + list(source.parent.glob("*.catalog.yaml")):
        if not (folder / catalog.name).exists():
            shutil.copyfile(catalog, folder / catalog.name)
    path = folder / f"{new_id}.yaml"
    with open(path, "w", encoding="utf-8") as written:
        yaml.dump(data, written)
    case_id = new_id + record["case_id"][len(scenario_id):]
    return Variant(record["case_id"], settings, f"{path}::{case_id}")


# A verdict, not a behaviour: a variant run on --bad is judged by --bad's expectations, so
# one that behaves as --good did fails where --good passed (its file encodes the change).
VERDICT_ONLY = {"status"}


def restores(good: dict, bad: dict, variant: dict | str | None, kind: str) -> str | None:
    """'exactly' / 'yes' when the variant no longer shows `kind` changed from --good (and
    nothing --bad did not show); None otherwise (or when it did not run: a string, why).
    A status that differs with nothing else is the expectations' verdict, not a change."""
    if not isinstance(variant, dict) or diff.incomparable(variant):
        return None
    now = {k for k, _ in diff.case_changes(good, variant)} - VERDICT_ONLY
    if kind in now or not now <= {k for k, _ in diff.case_changes(good, bad)}:
        return None
    return "exactly" if not now else "yes"


def moved(bad: dict, variant: dict | str | None) -> bool:
    return isinstance(variant, dict) and not diff.incomparable(variant) and bool(diff.case_changes(bad, variant))


def attribute(document: dict, prober, log=print, max_variants: int = MAX_VARIANTS) -> dict:
    """Every finding of a bisect document with the settings that restore it on --bad:
    every setting for every finding, in one run, up to `max_variants` variants; beyond,
    grouped (`_grouped_tries`)."""
    out = prober.out
    shutil.rmtree(out / "tries", ignore_errors=True)
    records = document["_records"]  # case id → {release: record}, kept in memory by bisect
    defaults: dict[str, dict | None] = {}

    def defaults_at(release: str) -> dict | None:
        if release not in defaults:
            python = matrix.ensure_env(release, log)
            defaults[release] = conf_keys.defaults_of(release, python) if python else None
        return defaults[release]

    groups: dict[tuple, list[tuple[dict, list[Setting]]]] = {}
    for found in document["findings"]:
        before, after = defaults_at(found["good"]), defaults_at(found["bad"])
        if before is None or after is None:
            found["attribution"] = {"tried": 0, "restored_by": [], "why_not": "a release's registry cannot be read"}
            continue
        settings, skipped = settings_between(before, after, found["good"], found["bad"])
        found["attribution"] = {"candidates": len(settings), "not_tried": skipped, "restored_by": []}
        groups.setdefault((found["good"], found["bad"], found["kind"]), []).append((found, settings[:MAX_SINGLE_TRIES]))
    every = [member for members in groups.values() for member in members]
    if len({(found["case_id"], s) for found, settings in every for s in settings}) <= max_variants:
        answers = _run_variants(every, records, document, prober, singles=True)
        for found, settings in every:
            _judge_singles(found, settings, answers, records, document)
    else:
        answers = _grouped_tries(groups, records, document, prober)
    pairs = []
    for members in groups.values():
        for found, settings in members:
            if found["attribution"]["restored_by"]:
                continue
            bad = _ends(records, document, found["case_id"])[1]
            tried = [s for s in settings if (s,) in answers.get(found["case_id"], {})]
            movers = [s for s in tried if moved(bad, answers[found["case_id"]][(s,)])]
            combos = list(itertools.combinations(movers, 2))[:MAX_PAIR_TRIES]
            found["attribution"]["pairs_tried"] = len(combos)
            if combos:
                pairs.append((found, combos))
    if pairs:
        paired = _run_variants(pairs, records, document, prober, singles=False)
        for found, combos in pairs:
            good, bad = _ends(records, document, found["case_id"])
            for combo in combos:
                verdict = restores(good, bad, paired.get(found["case_id"], {}).get(combo), found["kind"])
                if verdict:
                    found["attribution"]["restored_by"].append(_restoring(combo, verdict))
    findings = document["findings"]
    log(f"[bisect] settings tried on {document['bad']}: {sum(f['attribution'].get('tried', 0) for f in findings)} "
        f"single, {sum(f['attribution'].get('pairs_tried', 0) for f in findings)} pairs")
    return document


def _grouped_tries(groups: dict, records: dict, document: dict, prober) -> dict:
    """Beyond the variants budget: each group's first case every setting, the others the settings
    that moved the first one's observation at all."""
    firsts = [members[0] for members in groups.values()]
    answers = _run_variants(firsts, records, document, prober, singles=True)
    for found, settings in firsts:
        _judge_singles(found, settings, answers, records, document)
    others = []
    for members in groups.values():
        first, settings = members[0]
        first_bad = _ends(records, document, first["case_id"])[1]
        movers = [s for s in settings if moved(first_bad, answers.get(first["case_id"], {}).get((s,)))]
        others += [(found, movers) for found, _ in members[1:]]
    more = _run_variants(others, records, document, prober, singles=True)
    for found, settings in others:
        _judge_singles(found, settings, more, records, document)
        found["attribution"]["as_first_case"] = True  # tried: what moved the group's first case
    for case_id, tried in more.items():  # a case may be first of one group and behind in another
        answers.setdefault(case_id, {}).update(tried)
    return answers


def _judge_singles(found: dict, settings: list[Setting], answers: dict, records: dict, document: dict) -> None:
    """The settings that restore the finding; those that could not run, counted by why."""
    good, bad = _ends(records, document, found["case_id"])
    tried = answers.get(found["case_id"], {})
    attribution = found["attribution"]
    attribution["tried"] = len(settings)
    attribution["not_run"] = {}
    for setting in settings:
        variant = tried.get((setting,))
        if not isinstance(variant, dict) or diff.incomparable(variant):
            why = variant if isinstance(variant, str) else (diff.incomparable(variant) if variant else "did not run")
            attribution["not_run"][setting.key] = why
            continue
        verdict = restores(good, bad, variant, found["kind"])
        if verdict:
            attribution["restored_by"].append(_restoring((setting,), verdict))


def _ends(records: dict, document: dict, case_id: str) -> tuple[dict, dict]:
    return records[case_id][document["good"]], records[case_id][document["bad"]]


def _restoring(settings: tuple, verdict: str) -> dict:
    return {"settings": [{"key": s.key, "value": s.value, "why": s.why, "doc": s.doc} for s in settings],
            "exactly": verdict == "exactly"}


def _run_variants(plans, records: dict, document: dict, prober, singles: bool) -> dict:
    """case id → {settings tuple → the variant's record on --bad}: one run for all."""
    variants: dict[str, Variant] = {}
    wanted: dict[tuple[str, tuple], str] = {}
    for found, items in plans:
        record = records[found["case_id"]][document["good"]]
        for item in items:
            settings = (item,) if singles else tuple(item)
            if (found["case_id"], settings) in wanted:
                continue
            prober.variants += 1
            variant = write_variant(prober.out, record, settings, prober.variants)
            variants[variant.node_id] = variant
            wanted[(found["case_id"], settings)] = variant.node_id.split("::", 1)[1]
    if not variants:
        return {}
    ran = prober.run(document["bad"], list(variants), name=f"{document['bad']}-tries-{'single' if singles else 'pairs'}")
    answers: dict[str, dict] = {}
    paths = {v.node_id.split("::", 1)[1]: v.node_id.split("::", 1)[0] for v in variants.values()}
    for (case_id, settings), variant_case in wanted.items():
        record = (ran or {}).get(variant_case)
        if record is None:  # why, in one line: the release, or the harness's refusal of the file
            record = prober.broken.get(document["bad"]) or _refusal(prober.refused.get(str(Path(paths[variant_case]).resolve())))
        answers.setdefault(case_id, {})[settings] = record
    return answers


def _refusal(message: str | None) -> str:
    """The harness's refusal of a variant, without its path: `spark_conf.K: why`."""
    if not message:
        return "the variant did not run"
    return message.split(": ", 1)[1] if ": " in message else message
