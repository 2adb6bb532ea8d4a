"""Spark's own registry of SQL configs, read from the running JVM: which keys this Spark
declares, which of them are static, what kind of value each takes, and whether a value
converts (the config entry's own converter, with its range checks, on this version).

The registry is `SQLConf`'s map of config entries, a private field on every version from
3.0 (its name mangled by Scala on later ones), read by reflection: the one way all of
them can be asked. Nothing here sets a config anywhere: a value is checked by calling the
entry's converter on the text, which has no side effect."""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Optional

from py4j.java_gateway import JavaObject

from harness.scenario import confs
from harness.scenario.confs import conf_text
from harness.scenario.errors import excerpt
from harness.spark import engines

BOOLEAN, NUMBER, STRING = "boolean", "number", "string"
# Texts a converter is tried on to tell what it takes, in this order; the first it accepts
# decides (a boolean converter refuses "1", a number converter refuses "true").
PROBES = ("true", "1", "1.5", "10k", "10s")


@dataclass(frozen=True)
class Declared:
    key: str
    kind: str      # boolean, number (integer, long, double, size in bytes, duration) or string
    static: bool   # set only when the session starts: a scenario may never set it


class Registry:
    """One JVM's registry (a session's), read once: entries are looked up per key."""

    def __init__(self, spark):
        self.spark = spark
        sqlconf = _SQLConfObject(spark._jvm)
        self._entries = _Entries(spark._jvm, sqlconf)
        self._static = {str(k) for k in sqlconf.named("staticConfKeys", "java.util.Set")}
        self._declared: dict[str, Optional[Declared]] = {}
        self._keys: Optional[list[str]] = None

    def keys(self) -> list[str]:
        if self._keys is None:
            self._keys = self._entries.keys()
        return self._keys

    def declared(self, key: str) -> Optional[Declared]:
        """What this Spark (or, for its configs, the session's native engine) declares for
        `key`; None where it does not declare it."""
        if key not in self._declared:
            entry = self._entry(key)
            self._declared[key] = None if entry is None else Declared(key, _kind(entry), key in self._static)
        return self._declared[key]

    def _entry(self, key: str):
        # A native engine's entries have Spark's shape: a key, a default, a value converter.
        if confs.is_engine_conf(key):
            return (engines.config_entries(self.spark) or {}).get(key)
        return self._entries.get(key)

    def owner(self, key: str) -> str:
        """Whose registry declares `key`, in words: `Spark 4.1.4`, `comet 1.2.0`."""
        return (engines.version_words(self.spark) if confs.is_engine_conf(key) else None) or \
            f"Spark {self.spark.version}"

    def refusal(self, key: str, text: str) -> Optional[str]:
        """The registry's own message when the entry's converter refuses `text`, else None."""
        entry = self._entry(key)
        if entry is None:
            return None
        try:
            entry.valueConverter().apply(text)
        except Exception as exc:  # the converter's IllegalArgumentException, NumberFormatException, ...
            return _first_line(exc)
        return None


class _SQLConfObject:
    """The SQLConf object's fields, read in one walk (each field costs Py4J calls: the
    registry needs three kinds of them)."""

    FIELD = re.compile(r"([\w.$]+) org\.apache\.spark\.sql\.internal\.SQLConf\$\.([\w$]+)$")

    def __init__(self, jvm):
        self.cls = jvm.java.lang.Class.forName("org.apache.spark.sql.internal.SQLConf$")
        self.module = getattr(getattr(jvm.org.apache.spark.sql.internal, "SQLConf$"), "MODULE$")
        # "private static final java.util.Map org.apache.spark.sql.internal.SQLConf$.sqlConfEntries"
        self.fields = [m.groups() for m in (self.FIELD.search(str(f.toString())) for f in self.cls.getDeclaredFields())
                       if m]  # (type, name)

    def value(self, name: str):
        field = self.cls.getDeclaredField(name)
        field.setAccessible(True)
        return field.get(self.module)

    def named(self, name: str, java_type: str):
        """A field, public or not; Scala mangles private names on some versions
        (`org$apache$spark$sql$internal$SQLConf$$sqlConfEntries`)."""
        for kind, field in self.fields:
            if kind == java_type and (field == name or field.endswith("$" + name)):
                return self.value(field)
        raise RuntimeError(f"this Spark's SQLConf has no {name} that the harness can read")


class _Entries:
    """Every config entry SQLConf defines: its map of registered entries, and the entries
    it defines without registering them (Spark 4.3 builds some from a config file,
    `buildConfFromConfigFile`: `spark.sql.shuffledHashJoinFactor` is one, and Spark reads
    it like any other)."""

    def __init__(self, jvm, sqlconf: _SQLConfObject):
        self.jvm = jvm
        self.registered = sqlconf.named("sqlConfEntries", "java.util.Map")
        self.unregistered = {}
        for kind, name in sqlconf.fields:
            if kind.startswith(CONFIG_PACKAGE) and kind.endswith("ConfigEntry") \
                    and kind[len(CONFIG_PACKAGE):] not in REGISTERED_TYPES:
                entry = sqlconf.value(name)
                if entry is not None:
                    self.unregistered[str(entry.key())] = entry

    def get(self, key: str):
        entry = self.registered.get(key)
        return entry if entry is not None else self.unregistered.get(key)

    def keys(self) -> list[str]:
        joined = str(self.jvm.java.lang.String.join("\n", self.registered.keySet()))
        return sorted(set(k for k in joined.split("\n") if k) | set(self.unregistered))


CONFIG_PACKAGE = "org.apache.spark.internal.config."
# Field types of SQLConf's own entries that its map holds; a field of another entry type
# may hold one it does not.
REGISTERED_TYPES = ("ConfigEntry", "OptionalConfigEntry", "FallbackConfigEntry")


def _kind(entry) -> str:
    converter = entry.valueConverter()
    for text in (str(entry.defaultValueString()),) + PROBES:
        try:
            value = converter.apply(text)
        except Exception:
            continue
        if isinstance(value, JavaObject) and value.getClass().getName() == "scala.Some":
            value = value.get()  # an optional entry's Some(value)
        if isinstance(value, bool):
            return BOOLEAN
        if isinstance(value, (int, float)):
            return NUMBER
        return STRING
    return STRING  # a converter that refuses every probe takes some text of its own


def _first_line(exc: Exception) -> str:
    text = str(getattr(exc, "java_exception", None) or exc)
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), type(exc).__name__)
    # py4j prefixes "An error occurred while calling ..."; the Java message is what says why
    for marker in ("java.lang.IllegalArgumentException: ", "java.lang.NumberFormatException: "):
        if marker in text:
            line = text.split(marker, 1)[1].splitlines()[0].strip()
            break
    return line[:300]


def declared_keys(spark) -> list[str]:
    """Every key this Spark's registry declares."""
    return _Entries(spark._jvm, _SQLConfObject(spark._jvm)).keys()


def declared_defaults(spark) -> dict[str, dict]:
    """key → {default, kind, static, version, doc} for every SQL config this Spark declares:
    its default as the registry prints it, the release that added it (where the entry
    says), and the first sentence of its documentation."""
    registry = Registry(spark)
    found = {}
    for key in registry.keys():
        entry, declared = registry._entries.get(key), registry.declared(key)
        if entry is None or declared is None:
            continue
        version = str(entry.version()) if hasattr(entry, "version") else ""
        doc = " ".join(str(entry.doc()).split())
        found[key] = {"default": str(entry.defaultValueString()), "kind": declared.kind, "static": declared.static,
                      "version": version, "doc": doc.split(". ")[0][:200]}
    return found


_REGISTRIES: dict = {}


def registry_of(spark) -> Optional[Registry]:
    """The session's registry, read once per JVM; None where there is no JVM to ask (Spark
    Connect: the server checks what it is given)."""
    if getattr(spark, "_jvm", None) is None:
        return None
    if id(spark) not in _REGISTRIES:
        _REGISTRIES.clear()  # one session per worker: an older one is gone
        _REGISTRIES[id(spark)] = Registry(spark)
    return _REGISTRIES[id(spark)]


class ConfRefused(ValueError):
    """(field path, one line): a config this Spark will not let a scenario set."""


def check_settings(spark, data: dict) -> None:
    """Raise ConfRefused for the first config of the scenario that this Spark's registry
    refuses: static, a string config not vetted, a value its converter rejects, or a key
    this Spark does not declare that is close to one it does (a typo). A key declared by
    another Spark version only is left: the case runs without it (`undefined`)."""
    registry = registry_of(spark)
    if registry is None:
        return
    for where, key, value in confs.settings(data):
        if confs.is_iceberg_conf(key):  # Iceberg's, typed by harness.scenario.confs
            continue
        declared = registry.declared(key)
        if declared is None:
            refused = _undeclared_refusal(registry, key, value)
            if refused:
                raise ConfRefused(where, refused)
            continue
        who = registry.owner(key)
        if declared.static:
            raise ConfRefused(where, f"'{key}' is a static config of {who} (set when the session "
                                     "starts): a scenario may not set it")
        if declared.kind == STRING and key not in confs.VETTED_STRINGS:
            raise ConfRefused(where, f"'{key}' takes a string on {who}: only booleans, numbers, "
                                     "sizes, durations and the vetted string configs may be set (see README "
                                     "'Configs a scenario may set')")
        if isinstance(value, dict):  # sized by an estimate: a size in bytes
            if declared.kind != NUMBER or registry.refusal(key, "1k") is not None:
                raise ConfRefused(where, f"'{key}' does not take a size in bytes on {who}: "
                                         "only sizes may be given as estimate_of")
            continue
        refused = registry.refusal(key, conf_text(value))
        if refused is not None:
            raise ConfRefused(where, f"{who} refuses {excerpt(conf_text(value))} for '{key}': {refused}")


def _undeclared_refusal(registry: Registry, key: str, value) -> Optional[str]:
    """Why a key the running registry does not declare is refused: a typo (close to one
    that this Spark, or any engine version the harness loads, declares); for an engine's
    key another of its versions declares, a value of the wrong kind (that version's
    converter is not at hand: its measured kind decides). None: the case runs without it."""
    if not confs.is_engine_conf(key):
        if key in confs.measured_keys():
            return None
        close = difflib.get_close_matches(key, registry.keys(), n=1, cutoff=0.85)
        return f"'{key}' is not a config of Spark {registry.spark.version} (did you mean '{close[0]}'?)" \
            if close else None
    measured = engines.measured_configs().get(key)
    if measured is None:
        close = difflib.get_close_matches(key, sorted(engines.measured_configs()), n=1, cutoff=0.85)
        return (f"'{key}' is not a config of any engine version the harness loads"
                + (f" (did you mean '{close[0]}'?)" if close else ""))
    kind, who = measured["kind"], f"{measured['engine']} {', '.join(measured['versions'])}"
    if isinstance(value, dict) and kind != NUMBER:
        return f"'{key}' does not take a size in bytes on {who}: only sizes may be given as estimate_of"
    if kind == STRING and key not in confs.VETTED_STRINGS:
        return (f"'{key}' takes a string on {who}: only booleans, numbers, sizes, durations and the vetted "
                "string configs may be set")
    if kind == BOOLEAN and not isinstance(value, bool):
        return f"'{key}' takes true or false on {who}, not {value!r}"
    if kind == NUMBER and (isinstance(value, bool) or (isinstance(value, str) and not NUMBER_TEXT.match(value.strip()))):
        return f"'{key}' takes a number, size or duration on {who}, not {value!r}"
    return None


def declared_here(spark, key: str) -> bool:
    """Whether this Spark declares `key`; True where there is no registry to ask (Spark
    Connect: the server takes what it is given)."""
    registry = registry_of(spark)
    if confs.is_engine_conf(key):  # where no engine runs, the case runs without it
        return key in (engines.config_entries(spark) or ())
    return registry is None or confs.is_iceberg_conf(key) or registry.declared(key) is not None


def removed_in(spark, key: str) -> str | None:
    """The release that removed `key` where this Spark says so (SQLConf's removed configs:
    setting one to another value than its last default raises), else None."""
    if registry_of(spark) is None:
        return None
    try:
        found = spark._jvm.org.apache.spark.sql.internal.SQLConf.removedSQLConfigs().get(key)
        return str(found.get().version()) if found.isDefined() else None
    except Exception:  # a release without the map
        return None


# A number as a scenario may write it for a config whose converter is not at hand: 8192,
# 0.5, 64m, 30s (the converter of the engine's version that declares it decides there).
NUMBER_TEXT = re.compile(r"^\d+(?:\.\d+)?\s*[A-Za-z]{0,3}$")


def engine_kinds(spark) -> dict[str, str]:
    """key → kind (boolean, number, string) of every config the session's engine
    declares, read through each entry's own converter; {} where no engine is loaded."""
    return {key: _kind(entry) for key, entry in (engines.config_entries(spark) or {}).items()}
