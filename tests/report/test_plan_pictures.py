"""Plan pictures drawn once per distinct plan on a page."""
import pytest

from harness.report.plan_pictures import PlanPictures


def test_plan_pictures_are_drawn_once_per_distinct_plan(monkeypatch):
    record = {"kind": "case", "case_id": "c", "observed": {"initial": {"text": "== Physical Plan ==\n"
              "*(1) BroadcastHashJoin [k#1L], [k#2L], Inner, BuildRight, false\n:- *(1) Range (0, 10, step=1, splits=1)\n"
              "+- BroadcastExchange HashedRelationBroadcastMode(List(input[0, bigint, false]),false), [plan_id=9]\n"
              "   +- *(1) Range (0, 5, step=1, splits=1)\n"}}}
    drawings = PlanPictures()
    drawn = drawings.of(record)
    assert drawn and drawn["initial"]
    monkeypatch.setattr("harness.report.plan_pictures.pictures", lambda r: pytest.fail("drawn again"))
    # another case (another id, other rows) with the same plan and sizes: the same drawing
    assert drawings.of({**record, "case_id": "d", "observed": {**record["observed"], "rows": 7}}) == drawn
    assert drawings.of({**record, "kind": "agreement"}) is None
