"""Which buffers count as small for ``arraykit.jit``: the gradients a step makes that
it packs into one storage (:mod:`arraykit.jit_gradients`), and the inputs it donates
even where XLA then copies them.

Every buffer a compiled program takes or gives back costs the host about a
microsecond on every call (JAX makes or checks an array, the replaced one is
released). Packing buffers into one storage saves that, at the price of copies on the
device: a concatenation, or a copy XLA inserts. Pure metadata, no JAX.

State a step updates in place (an optimizer's moments) stays one storage per
parameter: packed into one, its updates became in-place writes of one buffer's slices,
which XLA ran slower on the CPU than the separate updates
(``benchmarks/bench_step_cost.py --only percall``).
"""

from __future__ import annotations

# Largest small buffer, in bytes, by platform: copying it should cost the device less
# than a buffer costs the host: tens of kilobytes at a CPU's memory bandwidth, about a
# megabyte at a GPU's.
MAX_BYTES = {"cpu": 16 << 10}
MAX_BYTES_ELSEWHERE = 1 << 20


def max_bytes(platform):
    """The largest buffer, in bytes, worth packing on ``platform`` ("cpu", "gpu", ...)."""
    return MAX_BYTES.get(platform, MAX_BYTES_ELSEWHERE)
