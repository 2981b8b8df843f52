"""RoleBench's splits: instructions 4:1 into train and test (instruction generalization), and whole roles held
out (role generalization, about one in nine, at least one). Seeded, so the same roles and seed give the same
split for the general and the role-specific files alike."""

from __future__ import annotations

import random
from collections.abc import Sequence

TEST_ROLE_SHARE = 1 / 9  # RoleLLM: 80 roles to train, 10 held out
TEST_INSTRUCTION_SHARE = 0.2  # RoleLLM: 1,200 general instructions to train, 300 to test


def held_out_roles(roles: Sequence[str], seed: int = 0, share: float = TEST_ROLE_SHARE) -> list[str]:
    """The roles held out for role generalization (none with fewer than two roles)."""
    if len(roles) < 2:
        return []
    shuffled = sorted(roles)
    random.Random(seed).shuffle(shuffled)
    return sorted(shuffled[:max(1, round(len(roles) * share))])


def test_instructions(questions: Sequence[str], seed: int = 0, share: float = TEST_INSTRUCTION_SHARE) -> set[str]:
    """The instructions held out for testing (at least one when there are two or more)."""
    if len(questions) < 2:
        return set()
    shuffled = sorted(set(questions))
    random.Random(seed).shuffle(shuffled)
    return set(shuffled[:max(1, round(len(shuffled) * share))])
