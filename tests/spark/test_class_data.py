"""The driver JVM's class-data archive: used when built, built once in the background,
never a reason for a session not to start."""
import os
import time

import pytest

from harness.core.options import RunOptions
from harness.spark import class_data
from harness.spark.java import java_executable, java_major
from harness.store.fingerprint import Environment


@pytest.fixture
def spawned(monkeypatch):
    """The builds started (the background process itself is not run)."""
    started = []
    monkeypatch.setattr(class_data.subprocess, "Popen", lambda command, **kwargs: started.append(command))
    return started


def _archive(folder):
    return class_data.archive_path(folder, java_executable())


def test_an_archive_that_exists_is_mapped_and_nothing_is_built(tmp_path, spawned):
    _archive(tmp_path).write_bytes(b"archive")
    assert class_data.driver_flags(str(tmp_path)) == f"-XX:SharedArchiveFile={_archive(tmp_path)} -Xlog:cds=off"
    assert spawned == []


def test_without_one_a_single_build_starts_and_the_session_runs_without(tmp_path, spawned):
    assert class_data.driver_flags(str(tmp_path)) == ""
    assert class_data.driver_flags(str(tmp_path)) == ""   # the first build holds the lock
    assert len(spawned) == 1 and spawned[0][-1] == str(_archive(tmp_path))


def test_a_lock_a_dead_build_left_is_taken_over(tmp_path, spawned):
    lock = _archive(tmp_path).with_suffix(".lock")
    lock.touch()
    old = time.time() - class_data.LOCK_STALE_S - 60
    os.utime(lock, (old, old))
    class_data.driver_flags(str(tmp_path))
    assert len(spawned) == 1


def test_a_failed_build_is_not_retried_the_same_day(tmp_path, spawned):
    _archive(tmp_path).with_suffix(".failed").write_text("RuntimeError: dump failed")
    assert class_data.driver_flags(str(tmp_path)) == "" and spawned == []


@pytest.mark.parametrize("folder", [None, "/a folder/with spaces"])
def test_off_or_unsplittable_means_no_flags(folder, spawned):
    assert class_data.driver_flags(folder) == "" and spawned == []


def test_off_by_environment(monkeypatch):
    monkeypatch.setenv("HARNESS_CLASS_DATA", "off")
    assert RunOptions.from_env().class_data is None
    monkeypatch.setenv("HARNESS_CLASS_DATA", "/somewhere")
    assert RunOptions.from_env().class_data == "/somewhere"


def test_an_old_java_leaves_a_note_and_no_archive(tmp_path, monkeypatch):
    monkeypatch.setattr(class_data, "java_version", lambda: "1.8.0_402")
    archive = _archive(tmp_path)
    archive.with_suffix(".lock").touch()
    class_data.build(archive)
    assert not archive.exists() and not archive.with_suffix(".lock").exists()
    assert "needs Java 11+" in archive.with_suffix(".failed").read_text()
    assert [p.name for p in tmp_path.iterdir()] == [archive.with_suffix(".failed").name]


@pytest.mark.parametrize("version, major", [("1.8.0_402", 8), ("11.0.13", 11), ("17.0.13", 17), ("21", 21),
                                            ("unknown", None)])
def test_java_major(version, major):
    assert java_major(version) == major


def test_the_archive_does_not_change_the_store_key(tmp_path):
    flags = RunOptions.driver_jvm_flags
    mapped = f"{flags} -XX:SharedArchiveFile={tmp_path}/spark-4.3.0-0123.jsa -Xlog:cds=off -Xshare:auto"
    assert Environment.of(RunOptions(driver_jvm_flags=mapped)) == Environment.of(RunOptions(driver_jvm_flags=flags))
    assert Environment.of(RunOptions(class_data=str(tmp_path))) == Environment.of(RunOptions())


def test_archives_whose_java_or_pyspark_is_gone_are_dropped_when_another_is_built(tmp_path, spawned):
    import json
    kept, gone, unrecorded = tmp_path / "spark-4.3.0-a.jsa", tmp_path / "spark-4.3.0-b.jsa", tmp_path / "c.jsa"
    for archive in (kept, gone, unrecorded):
        archive.write_bytes(b"archive")
    kept.with_suffix(".json").write_text(json.dumps({"java": str(java_executable()),
                                                     "jars": class_data._jars_folder()}))
    gone.with_suffix(".json").write_text(json.dumps({"java": str(java_executable()),
                                                     "jars": str(tmp_path / "removed-venv" / "jars")}))
    class_data.driver_flags(str(tmp_path))   # no archive for this Java and PySpark: a build starts
    assert len(spawned) == 1
    assert kept.exists() and unrecorded.exists() and not gone.exists() and not gone.with_suffix(".json").exists()


def test_a_folder_that_cannot_be_written_never_stops_a_session(tmp_path, spawned):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    assert class_data.driver_flags(str(blocked / "class-data")) == "" and spawned == []
