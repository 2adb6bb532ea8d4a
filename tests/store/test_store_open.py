"""Workers that open a new result store at the same moment all get it (SQLite answers
"database is locked" at once, without waiting, while one of them turns the file to WAL)."""
import multiprocessing

from harness.store.results_store import ResultStore


def _open(folder, start, answers) -> None:
    warned: list[str] = []
    store = ResultStore(folder, warned.append)
    start.wait()  # all at once
    answers.put((store.usable(), warned))


def test_workers_opening_a_new_store_at_once_all_use_it(tmp_path):
    context = multiprocessing.get_context("fork")
    failed = []
    for trial in range(12):
        folder = tmp_path / f"store{trial}"
        answers, start = context.Queue(), context.Barrier(10)
        workers = [context.Process(target=_open, args=(folder, start, answers)) for _ in range(10)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(60)
        failed += [warned for usable, warned in (answers.get(timeout=10) for _ in workers) if not usable]
    assert failed == []
