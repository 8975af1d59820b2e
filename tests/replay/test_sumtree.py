import pytest
import torch

from rlcli.replay.sumtree import SumTree

CPU = torch.device("cpu")


# 12345 and below fit one prefix sum over the leaves; 20000 and 300000 walk [B, F] rows below it.
TREE_CAPACITIES = [1, 7, 100, 1000, 12345, 20000, 300000]


def random_tree(capacity: int, seed: int) -> SumTree:
    """A tree with random priorities, about a third of them zero, set with repeated indices."""
    generator = torch.Generator().manual_seed(seed)
    tree = SumTree(capacity, CPU)
    count = min(2 * capacity, 100_000)
    for _ in range(3):
        index = torch.randint(capacity, (count,), generator=generator)
        priority = torch.rand(count, generator=generator, dtype=torch.float64)
        priority[torch.rand(count, generator=generator) < 0.35] = 0.0
        tree.set(index, priority)
    return tree


@pytest.mark.parametrize("capacity", TREE_CAPACITIES)
def test_sum_tree_layout_covers_the_capacity(capacity):
    fanout, depth = SumTree.layout(capacity)
    assert fanout**depth >= capacity
    assert 2 <= fanout <= 128
    tree = SumTree(capacity, CPU)
    assert [level.numel() for level in tree.levels] == [fanout**d for d in range(1, depth + 1)]
    assert all(level.dtype == torch.float64 for level in tree.levels)


@pytest.mark.parametrize("capacity", TREE_CAPACITIES)
def test_sum_tree_sums_stay_exact_after_repeated_sets(capacity):
    tree = random_tree(capacity, seed=capacity)
    leaves = tree.leaves
    assert float(leaves[capacity:].abs().sum()) == 0.0
    torch.testing.assert_close(tree.total(), leaves.sum(), rtol=1e-12, atol=0)
    # Every inner node is the sum of its children.
    for parent, children in zip(tree.levels[:-1], tree.levels[1:], strict=True):
        torch.testing.assert_close(parent, children.view(-1, tree.fanout).sum(1), rtol=1e-12, atol=1e-12)


def test_sum_tree_set_with_repeated_indices_keeps_one_of_the_values():
    tree = SumTree(1000, CPU)
    tree.set(torch.tensor([5, 5, 5, 900]), torch.tensor([1.0, 2.0, 3.0, 4.0]))
    assert float(tree.leaves[5]) in (1.0, 2.0, 3.0)
    assert float(tree.total()) == float(tree.leaves[5]) + 4.0
    tree.set(torch.tensor([5, 900]), 0.5)  # scalar priority
    assert tree.leaves[[5, 900]].tolist() == [0.5, 0.5]
    assert float(tree.total()) == 1.0


@pytest.mark.parametrize("capacity", TREE_CAPACITIES)
def test_sum_tree_find_matches_searchsorted_over_the_leaves(capacity):
    tree = random_tree(capacity, seed=capacity + 1)
    generator = torch.Generator().manual_seed(capacity + 2)
    mass = torch.rand(4096, generator=generator, dtype=torch.float64) * tree.total()
    found = tree.find(mass)
    expected = torch.searchsorted(tree.leaves.cumsum(0), mass, right=True)
    assert found.dtype == torch.int64
    assert torch.equal(found, expected)
    assert bool((tree.leaves.index_select(0, found) > 0).all())


@pytest.mark.parametrize("capacity", [7, 1000, 20000])
def test_sum_tree_find_skips_zero_priority_leaves(capacity):
    # Sparse nonzero leaves separated by runs of zeros, and masses at the interval edges.
    tree = SumTree(capacity, CPU)
    nonzero = torch.arange(1, capacity, 3)
    tree.set(nonzero, torch.arange(1, nonzero.numel() + 1, dtype=torch.float64))  # integer sums: exact
    edges = tree.leaves.cumsum(0).index_select(0, nonzero)
    # Every mass in [0, total): zero, each interior edge, and just below each edge.
    below = torch.nextafter(edges, torch.zeros_like(edges))
    mass = torch.cat([torch.zeros(1, dtype=torch.float64), edges[:-1], edges - 0.5, below])
    found = tree.find(mass)
    assert bool((tree.leaves.index_select(0, found) > 0).all())
    assert torch.equal(found, torch.searchsorted(tree.leaves.cumsum(0), mass, right=True))


def test_sum_tree_descent_never_returns_a_zero_leaf_at_a_row_edge():
    # Capacity 20000: fanout 28, levels of 28, 784 and 21952 nodes; the descent starts at the
    # 784-node level and walks the 28-wide rows of leaves. Leaf 0 ends row 0's mass at 0.1, leaf 28
    # (first of row 1) is empty, leaf 29 holds the rest. In float64 (0.1 + 1.0) - 1.0 > 0.1, so the
    # mass left for row 1 is negative.
    tree = SumTree(20000, CPU)
    tree.set(torch.tensor([0, 29]), torch.tensor([0.1, 1.0], dtype=torch.float64))
    mass = torch.tensor([0.1, 0.1 + 2**-55, 0.5], dtype=torch.float64)  # all inside leaf 29's [0.1, 1.1)
    assert torch.searchsorted(tree.leaves.cumsum(0), mass, right=True).tolist() == [29, 29, 29]
    assert tree.find(mass).tolist() == [29, 29, 29]


def test_sum_tree_of_capacity_one_always_finds_its_leaf():
    tree = SumTree(1, CPU)
    tree.set(torch.tensor([0]), torch.tensor([0.3]))
    assert tree.find(torch.tensor([0.0, 0.1, 0.2999], dtype=torch.float64)).tolist() == [0, 0, 0]
