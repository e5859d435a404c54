"""Eager kernels in the opt-in persistent compilation cache: a second process loads them."""

import json
import os
import pathlib
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from arraykit.kernels import compilation_cache
from arraykit.kernels.ahead import FirstCall, compile_ahead

_ROOT = pathlib.Path(__file__).resolve().parents[1]

# Eager work of every kind that compiles: launch's kernels (reading, in place, donating),
# size-bucket programs (small element-wise kernels' first calls), autograd's
# forward-with-VJP and VJP programs, an optimizer's in-place updates.
_EAGER = """
import json, sys
import numpy as np
import arraykit as ak

if len(sys.argv) > 1:
    ak.set_compilation_cache_dir(sys.argv[1])
ak.manual_seed(0)
model = ak.nn.Sequential(ak.nn.Conv2d(2, 4, 3, padding=1), ak.nn.BatchNorm2d(4), ak.nn.ReLU(),
                         ak.nn.Flatten(), ak.nn.Linear(4 * 6 * 6, 3))
opt = ak.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
x = ak.asarray(np.linspace(-1, 1, 5 * 2 * 6 * 6, dtype=np.float32).reshape(5, 2, 6, 6))
y = ak.asarray(np.arange(5) % 3)
losses = []
for _ in range(2):
    opt.zero_grad()
    loss = ak.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    losses.append(loss.item())
small = ak.asarray(np.arange(7, dtype=np.float32))
small += 1
values = {"losses": losses, "small": (ak.exp(small) * 2).tolist(),
          "weight": model[4].weight.tolist()}
print(json.dumps({"values": values, "info": ak.compilation_cache_info()}))
"""


def _run(*args):
    environment = dict(os.environ, PYTHONPATH=str(_ROOT), JAX_PLATFORMS="cpu")
    environment.pop(compilation_cache.ENVIRONMENT_VARIABLE, None)
    done = subprocess.run([sys.executable, "-c", _EAGER, *map(str, args)], capture_output=True,
                          text=True, env=environment, cwd=_ROOT, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_second_process_loads_the_eager_kernels_the_first_compiled(tmp_path):
    first = _run(tmp_path)
    assert first["info"]["hits"] == 0 and first["info"]["misses"] > 0
    assert first["info"]["writes"] == first["info"]["misses"]  # every eager program stored
    assert len(_entries(tmp_path)) == first["info"]["writes"]
    assert list(tmp_path.glob("*.named"))  # eager kernels found by name
    second = _run(tmp_path)
    assert second["info"] == {"hits": first["info"]["misses"], "misses": 0, "writes": 0,
                              "errors": 0}
    assert second["values"] == first["values"]  # the same executables: the same bits
    assert second["values"] == _run()["values"]  # and the same as with no cache


def test_corrupt_entries_are_compiled_and_written_again(tmp_path):
    first = _run(tmp_path)
    entries = _entries(tmp_path)
    for entry in entries:
        entry.write_bytes(b"not a program")
    second = _run(tmp_path)
    assert second["info"]["errors"] == len(entries)
    assert second["info"]["writes"] == len(entries)
    assert second["values"] == first["values"]
    third = _run(tmp_path)
    assert third["info"]["hits"] == len(entries) and third["info"]["errors"] == 0


def _entries(directory):
    """The stored programs: found by lowered text or by name."""
    return list(directory.glob("*.executable")) + list(directory.glob("*.named"))


def test_eager_kernels_are_not_stored_by_default():
    assert _run()["info"] == {"hits": 0, "misses": 0, "writes": 0, "errors": 0}


def _double(v):
    return v * 2


def test_first_call_serves_other_arguments_and_traces():
    call = FirstCall(_double, None, (), jax.jit(_double))
    np.testing.assert_array_equal(call(jnp.arange(3.0)), [0.0, 2.0, 4.0])
    assert not call.general
    np.testing.assert_array_equal(call(jnp.arange(4.0)), [0.0, 2.0, 4.0, 6.0])  # another shape
    assert call.general
    inside = jax.jit(lambda v: call(v) + 1)(jnp.arange(2.0))  # inside an outer trace
    np.testing.assert_array_equal(inside, [1.0, 3.0])


def test_first_call_made_ready_for_other_arguments_serves_every_call():
    call = FirstCall(_double, None, (), jax.jit(_double))
    call.ready(jnp.arange(3.0))  # compiled for arguments its first call does not pass
    for _ in range(2):
        np.testing.assert_array_equal(call(jnp.arange(4.0)), [0.0, 2.0, 4.0, 6.0])
    np.testing.assert_array_equal(call(jnp.arange(3.0)), [0.0, 2.0, 4.0])
    assert call.general


def test_first_call_under_a_trace_compiles_nothing():
    calls = []

    def nested(v):
        calls.append(v)
        return v

    call = FirstCall(_double, None, (), nested)
    jax.jit(lambda v: call(v))(jnp.arange(2.0))
    assert len(calls) == 1 and call.run is None


def test_an_unwritable_directory_leaves_programs_unstored(tmp_path):
    blocker = tmp_path / "a file"
    blocker.write_text("")
    previous = compilation_cache.get_compilation_cache_dir()
    compilation_cache._directory = str(blocker / "cache")  # cannot be made: a file is in the way
    try:
        before = compilation_cache.compilation_cache_info()
        out = FirstCall(_double, None, (), jax.jit(_double))(jnp.arange(5.0))
        after = compilation_cache.compilation_cache_info()
    finally:
        compilation_cache._directory = previous
    np.testing.assert_array_equal(out, np.arange(5.0) * 2)
    assert after["misses"] == before["misses"] + 1 and after["writes"] == before["writes"]


@pytest.mark.parametrize("options", [None, {"xla_backend_optimization_level": 0}])
def test_compiler_options_are_part_of_the_key(tmp_path, options):
    lowered = jax.jit(_double).trace(jnp.arange(3.0)).lower()
    devices = jax.devices("cpu")[:1]
    plain = compilation_cache._key(lowered, (), devices, None)
    assert (compilation_cache._key(lowered, (), devices, options) == plain) == (options is None)


def _doubling(position):
    """A kernel doubling argument ``position`` of two (every such kernel has one name,
    as launch's kernels do, so only which argument it drops tells them apart)."""

    def kernel(a, b):
        return (a, b)[position] * 2

    return kernel


_first, _second = _doubling(0), _doubling(1)


def test_kernels_differing_only_in_the_argument_they_drop_share_no_entry(tmp_path):
    previous = compilation_cache.get_compilation_cache_dir()
    compilation_cache.set_compilation_cache_dir(tmp_path)
    try:
        a, b = jnp.arange(3.0), jnp.arange(3.0) + 10
        np.testing.assert_array_equal(compile_ahead(_second, (a, b))(a, b), b * 2)
        np.testing.assert_array_equal(compile_ahead(_first, (a, b))(a, b), a * 2)
    finally:
        compilation_cache.set_compilation_cache_dir(previous)
    pruned = [jax.jit(f).trace(a, b).lower() for f in (_second, _first)]
    assert pruned[0].as_text() == pruned[1].as_text()  # the text alone cannot tell them apart
    keys = {compilation_cache._key(lowered, (), jax.devices("cpu")[:1], None) for lowered in pruned}
    assert len(keys) == 2
