"""--shard I/N: every file in exactly one shard, balanced, the same for the same inputs."""
import pytest

from harness.store.shards import Shard, split, split_digest


def test_every_file_in_exactly_one_shard_and_balanced():
    costs = {f"f{i}.yaml": float(i % 7 + 1) for i in range(40)}
    owner = split(costs, 3)
    assert set(owner) == set(costs) and set(owner.values()) == {1, 2, 3}
    loads = [sum(c for f, c in costs.items() if owner[f] == s) for s in (1, 2, 3)]
    assert max(loads) - min(loads) <= max(costs.values())
    assert split(dict(reversed(list(costs.items()))), 3) == owner
    assert split_digest(owner, 3) == split_digest(dict(owner), 3)


@pytest.mark.parametrize("text", ["0/2", "3/2", "1", "a/b", ""])
def test_a_bad_shard_is_refused(text):
    with pytest.raises(ValueError, match="--shard"):
        Shard.parse(text)


def test_a_shard_reads_back():
    assert Shard.parse(" 2/5 ") == Shard(2, 5) and Shard(2, 5).words() == "2/5"
