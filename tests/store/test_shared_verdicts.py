"""xdist workers share the SQL guard's verdicts through the store: each judges its share of
the files, reads the others' (a refusal too, as the same one line), and judges itself
what it waited for in vain."""
import pytest

from harness.core.options import RunOptions
from harness.plugin_items import _owns, judge_sql
from harness.plugin_state import REUSE
from harness.scenario.errors import ScenarioError
from harness.scenario.model import load_scenario
from harness.store.results_store import ResultStore, RunStamp
from harness.store.reuse import Reuse
from tests.conftest import MINIMAL


class Config:
    def __init__(self, reuse=None, worker=None, count=2):
        from harness.plugin_state import OPTIONS
        self.stash = pytest.Stash()
        self.stash[REUSE] = reuse
        self.stash[OPTIONS] = RunOptions()
        if worker is not None:
            self.workerinput = {"workerid": worker, "workercount": count}


def reuse_of(tmp_path, stamp_id="run-1", fresh=True):
    return Reuse(RunOptions(), ResultStore(tmp_path / "store", lambda _: None), RunStamp(stamp_id, "t", "h"), fresh)


def test_each_file_is_owned_by_exactly_one_worker(monkeypatch, tmp_path):
    paths = [tmp_path / f"f{i}.yaml" for i in range(40)]
    owners = [{p for p in paths if _owns(Config(worker=worker), p)} for worker in ("gw0", "gw1")]
    assert owners[0].isdisjoint(owners[1]) and owners[0] | owners[1] == set(paths)
    assert 10 < len(owners[0]) < 30  # spread, not all on one
    assert all(_owns(Config(), p) for p in paths)
    # a pytest run inside an xdist worker (pytester) is no worker: its environment says gw1 of 2
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    assert all(_owns(Config(), p) for p in paths)


def test_a_verdict_another_worker_made_is_read_and_never_judged_again(monkeypatch, tmp_path, write_scenario):
    scenario = load_scenario(write_scenario(MINIMAL))
    other = reuse_of(tmp_path)
    other.keep_sql_verdict(scenario, None)
    refused = load_scenario(write_scenario(MINIMAL.replace("id: minimal", "id: refused"), "r.yaml"))
    error = ScenarioError(refused.path, 5, "join.sql", "reads 'x', which is not a table of this scenario")
    other.keep_sql_verdict(refused, error)

    def judged(*args):
        raise AssertionError("judged again")
    monkeypatch.setattr("harness.check.runner.check_sql", judged)
    mine = Config(reuse_of(tmp_path))  # the same run: a --fresh run takes its own run's verdicts
    judge_sql(mine, scenario, wait=True)
    with pytest.raises(ScenarioError) as info:
        judge_sql(mine, refused, wait=True)
    assert str(info.value) == str(error)
    # the verdict holds at run time too: no second judgement in this process
    from harness.spark import sql_guard
    sql_guard.once_per_session(scenario, "a session", judged)

    # an earlier run's verdict is not taken by a --fresh run
    later = Config(reuse_of(tmp_path, stamp_id="run-2"))
    calls = []
    monkeypatch.setattr("harness.check.runner.check_sql", lambda session, s: calls.append(s.id))
    monkeypatch.setattr("harness.spark.session.get_session", lambda options: None)
    judge_sql(later, load_scenario(scenario.path), wait=False)
    assert calls == ["minimal"]


def test_a_worker_judges_itself_what_it_waited_for_in_vain(monkeypatch, tmp_path, write_scenario):
    import harness.plugin_items as items
    scenario = load_scenario(write_scenario(MINIMAL))
    worker = "gw1" if _owns(Config(worker="gw0"), scenario.path) else "gw0"
    monkeypatch.setattr(items, "SHARED_VERDICT_WAIT_S", 0.2)
    calls = []
    monkeypatch.setattr("harness.check.runner.check_sql", lambda session, s: calls.append(s.id))
    monkeypatch.setattr("harness.spark.session.get_session", lambda options: None)
    reuse = reuse_of(tmp_path)
    judge_sql(Config(reuse, worker=worker), scenario, wait=True)
    assert calls == ["minimal"] and reuse.sql_verdict(scenario) is True


def test_a_worker_stops_waiting_once_the_owner_went_through_its_share_without_a_verdict(monkeypatch, tmp_path,
                                                                                         write_scenario):
    """The owner could not judge the file (no session: its collection says why); the other
    worker judges it at once instead of waiting out the minute."""
    import time

    import harness.plugin_items as items
    from harness.plugin_items import judge_own_share
    scenario = load_scenario(write_scenario(MINIMAL))
    owner = "gw0" if _owns(Config(worker="gw0"), scenario.path) else "gw1"
    other = "gw1" if owner == "gw0" else "gw0"
    reuse = reuse_of(tmp_path)

    def no_session(options):
        raise RuntimeError("no session")
    monkeypatch.setattr("harness.spark.session.get_session", no_session)
    judge_own_share(Config(reuse, worker=owner), [scenario.path])  # judged nothing, said it is done
    assert reuse.sql_verdict(scenario) is None
    calls = []
    monkeypatch.setattr("harness.check.runner.check_sql", lambda session, s: calls.append(s.id))
    monkeypatch.setattr("harness.spark.session.get_session", lambda options: None)
    start = time.monotonic()
    judge_sql(Config(reuse_of(tmp_path), worker=other), scenario, wait=True)
    assert calls == ["minimal"] and time.monotonic() - start < items.SHARED_VERDICT_WAIT_S / 10
