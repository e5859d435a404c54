"""Eager kernels found by name in the persistent compilation cache: names that mean the
same program in every process, and a later process that runs them untraced."""

import enum
import json
import os
import pathlib
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from arraykit.core import dtypes as D
from arraykit.core import layout as L
from arraykit.kernels import bodies, compilation_cache
from arraykit.kernels.kernel_names import stable_text

_ROOT = pathlib.Path(__file__).resolve().parents[1]


def _user_function(x):
    return x


class _Mode(enum.Enum):
    ONE = 1


def test_arraykit_and_jax_names_are_stable():
    assert stable_text(bodies.add) == "arraykit.kernels.bodies:add"
    precision = jax.lax.Precision.HIGHEST
    assert stable_text(precision) == f"{type(precision).__module__}:Precision.HIGHEST"
    layout = L.Layout((2, 3), (3, 1), 4)
    assert stable_text((bodies.add, (1, None), layout, D.float32)) == (
        "(arraykit.kernels.bodies:add,(int:1,NoneType:None,),layout:(2, 3)/(3, 1)/4,dtype:float32,)")


@pytest.mark.parametrize("value", [
    lambda x: x,  # no name in its module
    _user_function,  # a user's code may change under the same name
    (bodies.add, _user_function),
    object(),
    _Mode.ONE,  # a user's enum
    np.add.reduce,  # a bound method: named by no module attribute
])
def test_values_without_a_stable_name_have_none(value):
    assert stable_text(value) is None


def test_values_that_compare_equal_are_told_apart():
    values = [1, 1.0, True, np.float32(1.0), np.float64(1.0), (1,), [1], "1",
              L.Layout((3,), (1,), 0), ((3,), (1,)), np.dtype("float32"), D.float32,
              slice(0, 1), (0, 1), -0.0, 0.0]
    texts = [stable_text(v) for v in values]
    assert None not in texts
    assert len(set(texts)) == len(texts)


def test_a_name_is_one_program_for_one_signature_donation_and_source(monkeypatch, tmp_path):
    monkeypatch.setattr(compilation_cache, "_directory", str(tmp_path))
    devices = (jax.devices("cpu")[0],)
    args = (None, jnp.ones(3, jnp.float32))
    path = compilation_cache.named_path("k", args, (), devices)
    assert path == compilation_cache.named_path("k", args, (), devices)
    others = [
        compilation_cache.named_path("k2", args, (), devices),
        compilation_cache.named_path("k", (None, jnp.ones(4, jnp.float32)), (), devices),
        compilation_cache.named_path("k", (None, jnp.ones(3, jnp.int32)), (), devices),
        compilation_cache.named_path("k", (None, jnp.asarray(1.0)), (), devices),  # weak type
        compilation_cache.named_path("k", (np.zeros(1, np.int64), jnp.ones(3)), (), devices),
        compilation_cache.named_path("k", args, (1,), devices),
    ]
    monkeypatch.setattr(compilation_cache, "_SOURCE_DIGEST", ["another arraykit"])
    others.append(compilation_cache.named_path("k", args, (), devices))
    assert path not in others and len(set(others)) == len(others)
    assert compilation_cache.named_path(None, args, (), devices) is None
    monkeypatch.setattr(compilation_cache, "_directory", None)
    assert compilation_cache.named_path("k", args, (), devices) is None


# Kernels of every launcher path, on arrays too large for the host paths and the size
# buckets: reading, static arguments (two axes), in place with and without donation,
# creation; then autograd through views of storages of two sizes with one layout (one
# kernel, two VJP programs) in the order the command line gives.
_SCRIPT = """
import json, sys
import numpy as np
import arraykit as ak
from arraykit.kernels import launch

ak.set_compilation_cache_dir(sys.argv[1])
x = ak.asarray(np.linspace(-2, 2, 96 * 64, dtype=np.float32).reshape(96, 64), device="cpu")
values = {}
values["exp"] = float(ak.sum(ak.exp(x)))
values["sum0"] = ak.sum(x * x, axis=0)[:3].tolist()
values["sum1"] = ak.sum(x * x, axis=1)[:3].tolist()
y = ak.zeros((96, 64), device="cpu")
y += x
y[10:20] *= 3
values["inplace"] = [float(y[15, 5]), float(y[5, 5])]
m = ak.asarray(np.eye(3) * 2 + 0.25, device="cpu")  # LAPACK, which a lowering initializes
values["inv"] = (ak.linalg.inv(m) @ m).tolist()
traced = launch.cache_info()["traces"]
grads = {}
for n in map(int, sys.argv[2].split(",")):
    a = ak.asarray(np.arange(n, dtype=np.float32), device="cpu", requires_grad=True)
    (a[:3] * 3.0 + a[1:4] * a[1:4]).sum().backward()
    grads[n] = a.grad.tolist()
b = ak.asarray(np.arange(3, dtype=np.float32), device="cpu", requires_grad=True)
sum([(b * b).sum(), b.sum().clone()]).backward()  # 0-d kernels whose VJP keeps nothing
grads["scalars"] = b.grad.tolist()
print(json.dumps({"values": values, "grads": grads, "traced": traced,
                  "info": ak.compilation_cache_info()}))
"""


def _run(directory, sizes):
    environment = dict(os.environ, PYTHONPATH=str(_ROOT), JAX_PLATFORMS="cpu")
    environment.pop(compilation_cache.ENVIRONMENT_VARIABLE, None)
    done = subprocess.run([sys.executable, "-c", _SCRIPT, str(directory), sizes], capture_output=True,
                          text=True, env=environment, cwd=_ROOT, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _expected_grad(n):
    a = np.arange(n, dtype=np.float32)
    grad = np.zeros(n, np.float32)
    grad[:3] += 3.0
    grad[1:4] += 2 * a[1:4]
    return grad.tolist()


def test_a_later_process_runs_named_kernels_untraced_and_gradients_stay_right(tmp_path):
    first = _run(tmp_path, "10,20")
    assert first["traced"] > 0 and first["info"]["hits"] == 0
    assert list(tmp_path.glob("*.named"))
    second = _run(tmp_path, "20,10")  # the other storage size first: its own programs
    assert second["traced"] == 0  # every kernel before autograd loaded by name, untraced
    assert second["values"] == first["values"]
    third = _run(tmp_path, "10,20")
    assert third["info"]["misses"] == 0 and third["info"]["errors"] == 0
    for run in (first, second, third):
        assert run["grads"] == {"10": _expected_grad(10), "20": _expected_grad(20),
                                "scalars": [1.0, 3.0, 5.0]}
    x = np.linspace(-2, 2, 96 * 64, dtype=np.float32).reshape(96, 64)
    np.testing.assert_allclose(first["values"]["sum0"], (x * x).sum(axis=0)[:3], rtol=1e-5)
    np.testing.assert_allclose(first["values"]["sum1"], (x * x).sum(axis=1)[:3], rtol=1e-5)
    assert first["values"]["inplace"] == [float(x[15, 5] * 3), float(x[5, 5])]
    np.testing.assert_allclose(first["values"]["inv"], np.eye(3), atol=1e-12)


def test_corrupt_named_entries_are_compiled_and_written_again(tmp_path):
    first = _run(tmp_path, "10")
    named = list(tmp_path.glob("*.named"))
    for entry in named:
        entry.write_bytes(b"not a program")
    second = _run(tmp_path, "10")
    assert second["info"]["errors"] == len(named)
    assert second["values"] == first["values"] and second["grads"] == first["grads"]
    assert _run(tmp_path, "10")["info"]["errors"] == 0


# Two CPU devices: one-device programs on the second device, a creation kernel placing
# its result there with no argument that says so, and a gradient.
_TWO_DEVICES = """
import json, sys
import numpy as np
import arraykit as ak
import jax

ak.set_compilation_cache_dir(sys.argv[1])
second = jax.devices("cpu")[1]
x = ak.asarray(np.linspace(0, 1, 5000, dtype=np.float32), device=second, requires_grad=True)
z = ak.zeros(5000, device=second) + x
(ak.exp(z) * 2).sum().backward()
values = [float(z.sum()), x.grad[:3].tolist(), z.device.id, x.grad.device.id]
print(json.dumps({"values": values, "info": ak.compilation_cache_info()}))
"""


def test_one_device_programs_load_on_their_device_in_a_process_with_several(tmp_path):
    environment = dict(os.environ, PYTHONPATH=str(_ROOT), JAX_PLATFORMS="cpu",
                       XLA_FLAGS="--xla_force_host_platform_device_count=2")
    environment.pop(compilation_cache.ENVIRONMENT_VARIABLE, None)
    runs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", _TWO_DEVICES, str(tmp_path)],
                              capture_output=True, text=True, env=environment, cwd=_ROOT,
                              timeout=600, check=False)
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    first, second = runs
    assert second["values"] == first["values"]
    assert second["values"][2:] == [1, 1]
    assert second["info"]["errors"] == 0 and second["info"]["misses"] == 0
    assert second["info"]["hits"] == first["info"]["misses"]


def test_no_names_once_the_source_changed_under_the_process(monkeypatch, tmp_path):
    monkeypatch.setattr(compilation_cache, "_directory", str(tmp_path))
    monkeypatch.setattr(compilation_cache, "_SOURCE_DIGEST", [])
    changed = [(path, relative, size + 1, mtime)
               for path, relative, size, mtime in compilation_cache._SOURCE_AT_IMPORT]
    monkeypatch.setattr(compilation_cache, "_SOURCE_AT_IMPORT", changed)
    args = (None, jnp.ones(3, jnp.float32))
    assert compilation_cache.named_path("k", args, (), (jax.devices("cpu")[0],)) is None


def test_the_compile_option_thresholds_are_part_of_a_kernels_name(monkeypatch):
    from arraykit.kernels import launch

    before = launch.options_inputs()
    monkeypatch.setattr(launch, "SMALL_KERNEL_ELEMENTS", 0)
    assert launch.options_inputs() != before


def test_zero_cotangents_keep_no_program_per_shape_with_the_cache_off():
    import arraykit as ak
    from arraykit.autograd import graph

    assert ak.get_compilation_cache_dir() is None
    before = len(graph._ZEROS)
    x = ak.asarray(np.arange(6.0, dtype=np.float32), device="cpu", requires_grad=True)
    values, indices = ak.sort(x * 2), None  # one output of two gets no cotangent
    values, indices = ak.topk(x, 2)
    values.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 0, 0, 0, 1, 1])
    assert len(graph._ZEROS) == before
