"""The store file: entries verified on read, concurrent writers, bounded size, and a
store that cannot be used is one warning, never a failure."""
import multiprocessing
import os
import sqlite3

import pytest

from harness.store.results_store import ResultStore, RunStamp, store_path

STAMP = RunStamp("run1", "2026-11-25T10:00:00+00:00", "host-a")


@pytest.fixture
def warnings_seen():
    return []


@pytest.fixture
def store(tmp_path, warnings_seen):
    return ResultStore(tmp_path / "cache", warnings_seen.append)


def test_an_entry_comes_back_with_the_run_that_stored_it(store):
    store.put("k1", "case", "c[x]", "4.3.0", {"observed": {"rows": 3}}, STAMP, 1.5)
    got = store.get("k1")
    assert got.payload == {"observed": {"rows": 3}} and got.stamp == STAMP and got.seconds == 1.5
    assert store.get("missing") is None
    assert store.durations("4.3.0") == {"c[x]": 1.5} and store.durations("3.5.9") == {}


@pytest.mark.parametrize("damage", ["UPDATE entries SET payload = '{\"observed\": {\"rows\": 4}}'",
                                    "UPDATE entries SET payload = 'not json', payload_digest = 'x'",
                                    "UPDATE entries SET format = 99"])
def test_a_damaged_or_foreign_entry_is_one_warning_and_dropped(store, warnings_seen, damage):
    store.put("k1", "case", "c", "4.3.0", {"observed": {"rows": 3}}, STAMP, 1.0)
    with sqlite3.connect(store.path) as db:
        db.execute(damage)
    assert store.get("k1") is None
    assert len(warnings_seen) == 1 and "store entry" in warnings_seen[0] and "runs again" in warnings_seen[0]
    assert store.count() == 0


def test_a_file_that_is_not_a_store_is_one_warning(tmp_path, warnings_seen):
    folder = tmp_path / "cache"
    folder.mkdir()
    store_path(folder).write_bytes(b"this is not a database" * 100)
    store = ResultStore(folder, warnings_seen.append)
    assert store.get("k") is None
    store.put("k", "case", "c", "4.3.0", {}, STAMP, 0.0)
    assert len(warnings_seen) == 1 and "result store not used" in warnings_seen[0]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_an_unwritable_folder_is_one_warning(tmp_path, warnings_seen):
    blocked = tmp_path / "blocked"
    blocked.mkdir(mode=0o500)
    store = ResultStore(blocked / "cache", warnings_seen.append)
    store.put("k", "case", "c", "4.3.0", {}, STAMP, 0.0)
    assert store.get("k") is None and len(warnings_seen) == 1


def test_a_folder_that_cannot_be_made_is_one_warning(tmp_path, warnings_seen):
    (tmp_path / "file").write_text("")
    store = ResultStore(tmp_path / "file" / "cache", warnings_seen.append)
    store.put("k", "case", "c", "4.3.0", {}, STAMP, 0.0)
    assert store.get("k") is None
    assert len(warnings_seen) == 1 and "cannot open" in warnings_seen[0]


def _writer(folder, start):
    store = ResultStore(folder, lambda message: None)
    for i in range(start, start + 200):
        store.put(f"k{i}", "case", f"c{i}", "4.3.0", {"i": i}, STAMP, 0.1)


def test_concurrent_writers_lose_nothing(tmp_path):
    folder = tmp_path / "cache"
    ResultStore(folder, print).usable()
    processes = [multiprocessing.get_context("spawn").Process(target=_writer, args=(folder, n * 200))
                 for n in range(4)]
    for p in processes:
        p.start()
    for p in processes:
        p.join(60)
    store = ResultStore(folder, print)
    assert store.count() == 800
    assert all(store.get(f"k{i}").payload == {"i": i} for i in range(0, 800, 37))


def test_pruned_by_age_then_by_size(store):
    for i in range(10):
        store.put(f"k{i}", "case", f"c{i}", "4.3.0", {"pad": "x" * 1000}, STAMP, 0.1)
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE entries SET used_at = used_at - 40 * 86400 WHERE key IN ('k0', 'k1')")
        db.execute("UPDATE entries SET used_at = used_at - 10 WHERE key = 'k2'")
    assert store.prune(max_bytes=10**9, max_age_days=30) == 2
    assert store.prune(max_bytes=7 * 1020, max_age_days=30) >= 1
    assert store.get("k2") is None and store.get("k9") is not None
    assert store.count() <= 7


def test_shards_agree_on_the_first_split_written(store):
    first = store.agreed_split("split-key", {"a.yaml": 1, "b.yaml": 2})
    later = store.agreed_split("split-key", {"a.yaml": 2, "b.yaml": 1})
    assert first == later == {"a.yaml": 1, "b.yaml": 2}


def _endless_writer(folder):
    store = ResultStore(folder, lambda message: None)
    i = 0
    while True:
        store.put(f"k{i}", "case", f"c{i}", "4.3.0", {"i": i, "pad": "x" * 2000}, STAMP, 0.1)
        i += 1


def test_a_killed_writer_leaves_no_half_entry(tmp_path):
    import time
    folder = tmp_path / "cache"
    ResultStore(folder, print).usable()
    writer = multiprocessing.get_context("spawn").Process(target=_endless_writer, args=(folder,))
    writer.start()
    # killed while it writes: once it has written some (a spawned interpreter under load
    # can take seconds to start), then a moment more
    deadline = time.monotonic() + 120
    while ResultStore(folder, lambda message: None).count() == 0 and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(0.5)
    writer.kill()
    writer.join(30)
    seen = []
    store = ResultStore(folder, seen.append)
    written = store.count()
    assert written > 0
    assert all(store.get(f"k{i}").payload["i"] == i for i in range(written))
    assert not seen
