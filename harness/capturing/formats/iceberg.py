"""An Iceberg table as capture records it: a statistics-only Iceberg table with its
schema, its current snapshot's row count and size, its partition spec as Iceberg
transforms, each partition's values and rows of every spec rows were written under
(earlier specs kept as `earlier_specs`), its sort order and its vetted layout
properties, read from its own metadata."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from harness.capturing.relations import (
    CaptureError,
    CapturedTable,
    relation_reference,
    scenario_type,
    struct_fields,
    v2_identifier,
)
from harness.scenario.formats.iceberg import MAX_DATA_FILES, PROPERTIES
from harness.scenario.tables import (
    MAX_PARTITIONS,
    Transform,
    bucket_combinations,
    partition_value_problem,
)


# Iceberg's transform names (Transform.toString) → the scenario's partition_by form
_ICEBERG_TRANSFORMS = {"year": "years", "month": "months", "day": "days", "hour": "hours"}


NAME = "iceberg"


def claims_relation(relation) -> bool:
    return str(relation.table().getClass().getName()).startswith("org.apache.iceberg.")


def _is_metadata_table(table) -> bool:
    """One of Iceberg's metadata tables (`t.snapshots`, `t.files`, ...): a BaseMetadataTable."""
    cls = table.getClass()
    while cls is not None:
        if str(cls.getName()) == "org.apache.iceberg.BaseMetadataTable":
            return True
        cls = cls.getSuperclass()
    return False


def read_relation(spark, relation) -> CapturedTable:
    """An Iceberg table as a statistics-only Iceberg table: its schema, its current
    snapshot's row count and size, and its layout (harness.spark.formats.iceberg replays it as
    data files known to the metadata only)."""
    _, namespace, name = v2_identifier(relation)
    database = namespace[-1] if namespace else "default"
    table = relation.table().table()  # org.apache.iceberg.Table
    if _is_metadata_table(table):
        raise CaptureError(f"it reads Iceberg's metadata table {'.'.join(namespace + [name])}: capture reads "
                           "tables of rows")
    schema = {f.name(): scenario_type(database, name, f) for f in struct_fields(relation.schema())}
    snapshot = table.currentSnapshot()
    summary = dict(snapshot.summary()) if snapshot is not None else {}
    stats = {"rows": int(summary.get("total-records", 0)), "size_bytes": int(summary.get("total-files-size", 0))}
    layout, notes = {}, []
    where = f"{database}.{name}"
    spec = _iceberg_spec(table, schema, where, notes)
    if spec:
        partitions, earlier = _iceberg_partitions(spark, relation, table, spec, schema, where, notes)
        if partitions is not None or all(f.transform.name == "bucket" for f in spec) and \
                bucket_combinations({"partition_by": [f.text for f in spec]}) <= MAX_PARTITIONS:
            layout["partition_by"] = [f.text for f in spec]
            if earlier:
                layout["earlier_specs"] = earlier
            if partitions is not None:
                layout["partition_values"] = partitions
                stats["rows"] = sum(p["rows"] for p in partitions)
                _attach_files(spark, relation, spec, schema, partitions, table, where, notes)
    elif stats["rows"]:
        files = _data_files(spark, relation, schema, [], where, notes)
        if files is not None:
            layout["data_files"] = [entry for _, _, entry in files]
    order = _iceberg_sort_order(table, where, notes)
    if order:
        layout["sort_by"] = order
    properties = {str(k): str(v) for k, v in dict(table.properties()).items()
                  if k in PROPERTIES and PROPERTIES[k](str(v))}
    if properties:
        layout["properties"] = properties
    # its partitions may feed a storage-partitioned join; ANALYZE TABLE takes no V2 table
    captured = CapturedTable(database, name, schema, stats, partitions=layout, format=NAME, notes=notes,
                             grouped_partitions=True, analyzable=False)
    captured.reference = relation_reference(relation)
    return captured


@dataclass(frozen=True)
class SpecField:
    """A partition field: its transform, as the scenario writes it (`text`), and its name
    in Iceberg's partitions table (`name`)."""
    transform: Transform
    text: str
    name: str


def _iceberg_spec(table, schema: dict, where: str, notes: list) -> list:
    """The current partition spec as Transforms, or [] (with a note) when a field is one
    a scenario cannot declare."""
    return _spec_fields(table, table.spec(), schema, where, notes) or []


def _spec_fields(table, part_spec, schema: dict, where: str, notes: list) -> list | None:
    """A partition spec's fields, or None (with a note) when one is a field a scenario
    cannot declare."""
    fields = []
    for part in part_spec.fields():
        column = str(table.schema().findColumnName(part.sourceId()))
        transform = str(part.transform().toString())
        base, _, rest = transform.partition("[")
        width = int(rest.rstrip("]")) if rest else None
        if base == "identity":
            fields.append(SpecField(Transform("identity", column), column, str(part.name())))
        elif base in ("bucket", "truncate") and width is not None:
            fields.append(SpecField(Transform(base, column, width), f"{base}({width}, {column})", str(part.name())))
        elif base in _ICEBERG_TRANSFORMS:
            name = _ICEBERG_TRANSFORMS[base]
            fields.append(SpecField(Transform(name, column), f"{name}({column})", str(part.name())))
        else:
            notes.append(f"{where} is partitioned by {transform}({column}), which a scenario cannot declare: its "
                         "partition layout is not replayed, so a storage-partitioned join over it may plan otherwise")
            return None
        if column not in schema:
            notes.append(f"{where} is partitioned on the nested field {column}: its partition layout is not replayed")
            return None
    return fields


def _iceberg_partitions(spark, relation, table, spec: list, schema: dict, where: str,
                        notes: list) -> tuple[list | None, list]:
    """Each partition's values and rows, from the table's `partitions` metadata table, of
    every spec rows were written under: a partition of an earlier spec carries `spec`, its
    index among the earlier specs (returned second, oldest first, as the scenario writes
    them). None (with a note) when there are too many or a value or an earlier spec
    cannot be written."""
    partitions = spark.table(relation_reference(relation) + ".`partitions`")
    current = int(table.spec().specId())
    if "spec_id" not in partitions.columns:  # before Iceberg 1.2: the current spec's only
        rows = [(current, row) for row in partitions.select("partition", "record_count")
                .limit(MAX_PARTITIONS + 1).collect()]
    else:
        rows = [(int(row["spec_id"]), row) for row in partitions.groupBy("spec_id", "partition")
                .agg({"record_count": "sum"}).withColumnRenamed("sum(record_count)", "record_count")
                .limit(MAX_PARTITIONS + 1).collect()]
    if not rows:
        notes.append(f"{where} has no rows: its partitions are replayed only if its spec is all buckets")
        return None, []
    if len(rows) > MAX_PARTITIONS:
        kept = "every bucket, rows spread evenly" if all(f.transform.name == "bucket" for f in spec) else \
            "unpartitioned"
        notes.append(f"{where} has more than {MAX_PARTITIONS:,} partitions: replayed as {kept}")
        return None, []
    earlier_ids = sorted({spec_id for spec_id, _ in rows if spec_id != current})
    if len(earlier_ids) > MAX_EARLIER_SPECS:
        notes.append(f"{where} holds rows written under {len(earlier_ids)} earlier partition specs, more than the "
                     f"{MAX_EARLIER_SPECS} a scenario holds: its partition layout is not replayed")
        return None, []
    fields_of = {current: spec}
    for spec_id in earlier_ids:
        fields_of[spec_id] = _spec_fields(table, table.specs().get(spec_id), schema, where, notes)
        if fields_of[spec_id] is None:
            return None, []
    out = []
    for spec_id, row in rows:
        values = []
        for spec_field in fields_of[spec_id]:
            value = row["partition"][spec_field.name]
            value = value.isoformat() if isinstance(value, dt.date) else value
            transform = spec_field.transform
            problem = partition_value_problem(transform, schema.get(transform.column), value)
            if problem:
                notes.append(f"{where}: a partition value of {spec_field.text} cannot be replayed ({problem}): "
                             "its partition layout is not replayed")
                return None, []
            values.append(value)
        entry = {"values": values, "rows": int(row["record_count"])}
        if spec_id != current:
            entry["spec"] = earlier_ids.index(spec_id)
        out.append(entry)
    if earlier_ids:
        notes.append(f"{where}: rows were written under {len(earlier_ids)} earlier partition spec(s): replayed as "
                     "the table's history made them (earlier_specs: each spec's partitions appended under it, then "
                     "the spec evolved)")
    earlier = [[f.text for f in fields_of[spec_id]] for spec_id in earlier_ids]
    return sorted(out, key=lambda p: (p.get("spec", len(earlier)), [(v is None, str(v)) for v in p["values"]])), \
        earlier


# the earlier partition specs a statistics-only Iceberg table declares at most (schema)
MAX_EARLIER_SPECS = 8
# column types whose bounds a scenario replays (timestamps as UTC instants)
BOUND_TYPES = ("int", "long", "double", "string", "date", "timestamp", "boolean")


def _data_files(spark, relation, schema: dict, partition_names: list[str], where: str,
                notes: list) -> list | None:
    """The table's data files, from its `data_files` metadata table: each (spec id, partition
    struct, entry), the entry its rows, length and each column's bounds and null count
    (`readable_metrics`, Iceberg 1.2+). None, with a note, when they cannot be listed."""
    files = spark.table(relation_reference(relation) + ".`data_files`")
    if "readable_metrics" not in files.columns:
        notes.append(f"{where}: this Iceberg release lists no readable column bounds: its data files are not "
                     "replayed, so a filter that skips files by their bounds may be sized otherwise")
        return None
    columns = [c for c, type_name in schema.items() if type_name in BOUND_TYPES]
    selected = ["spec_id", "record_count", "file_size_in_bytes"] + (["partition"] if partition_names else [])
    for i, column in enumerate(columns):
        metrics = f"readable_metrics.`{column}`"
        for bound in ("lower_bound", "upper_bound"):
            value = f"{metrics}.{bound}"
            selected.append(f"{'unix_micros(' + value + ')' if schema[column] == 'timestamp' else value} AS b{i}_{bound}")
        selected.append(f"{metrics}.null_value_count AS b{i}_nulls")
    rows = files.selectExpr(*selected).limit(MAX_DATA_FILES + 1).collect()
    if len(rows) > MAX_DATA_FILES:
        notes.append(f"{where} has more than {MAX_DATA_FILES:,} data files: they are not replayed (one file per "
                     "partition), so a filter that skips files by their bounds may be sized otherwise")
        return None
    out = []
    for row in rows:
        entry = {"rows": int(row["record_count"]), "size_bytes": int(row["file_size_in_bytes"])}
        metrics = {}
        for i, column in enumerate(columns):
            found = {key: _bound_value(row[f"b{i}_{bound}"], schema[column])
                     for key, bound in (("lower", "lower_bound"), ("upper", "upper_bound"))
                     if row[f"b{i}_{bound}"] is not None}
            if row[f"b{i}_nulls"] is not None:
                found["nulls"] = int(row[f"b{i}_nulls"])
            if found:
                metrics[column] = found
        if metrics:
            entry["columns"] = metrics
        out.append((int(row["spec_id"]), row["partition"] if partition_names else None, entry))
    return out


def _bound_value(value, type_name: str):
    if type_name == "timestamp":  # microseconds since the epoch, as a UTC instant
        instant = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=int(value))
        return instant.isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


def _attach_files(spark, relation, spec: list, schema: dict, partitions: list, table, where: str,
                  notes: list) -> None:
    """Each partition's data files, under its entry of `partition_values` (matched by spec
    and values)."""
    files = _data_files(spark, relation, schema, [f.name for f in spec], where, notes)
    if files is None:
        return
    current = int(table.spec().specId())
    earlier_ids = sorted({spec_id for spec_id, _, _ in files if spec_id != current})
    fields_of = {current: spec}
    for spec_id in earlier_ids:
        fields_of[spec_id] = _spec_fields(table, table.specs().get(spec_id), schema, where, [])
    by_key: dict = {}
    for spec_id, partition, entry in files:
        values = [_bound_value(partition[f.name], "") if partition[f.name] is not None else None
                  for f in fields_of[spec_id]]
        index = None if spec_id == current else earlier_ids.index(spec_id)
        by_key.setdefault((index, tuple(map(str, values))), []).append(entry)
    for partition in partitions:
        found = by_key.get((partition.get("spec"), tuple(map(str, partition["values"]))))
        if found and sum(f["rows"] for f in found) == partition["rows"]:
            partition["data_files"] = found


def _iceberg_sort_order(table, where: str, notes: list) -> list[str]:
    order = []
    for part in table.sortOrder().fields():
        column = str(table.schema().findColumnName(part.sourceId()))
        if str(part.transform().toString()) != "identity":
            notes.append(f"{where}'s sort order by {part.transform()}({column}) is not replayed")
            return []
        order.append(column if str(part.direction()) == "ASC" else f"{column} desc")
    return order
