"""Permutations for the samplers from arraykit's generators."""

from __future__ import annotations

from ... import random as R

_SEED_BOUND = 2**62


def fresh_generator(generator):
    """``generator``, or (None) a new one seeded by a draw from the default generator
    (PyTorch's samplers do the same, so ``arraykit.manual_seed`` fixes their order)."""
    if generator is not None:
        return generator
    seed = int(R.randint(0, _SEED_BOUND, (), generator=R.default_generator()).item())
    return R.Generator(R.default_generator().device).manual_seed(seed)


def permutation(n, generator):
    """A random permutation of ``range(n)`` as a list, drawn from ``generator``."""
    return R.randperm(n, generator=generator).tolist()
