"""The opt-in persistent compilation cache: reused by a second process, scoped to arraykit."""

import json
import os
import pathlib
import subprocess
import sys

import jax
import numpy as np
import pytest

import arraykit as ak
from arraykit.kernels import compilation_cache

_ROOT = pathlib.Path(__file__).resolve().parents[1]

_STEP = """
import functools, json, sys
import jax
import numpy as np
import arraykit as ak
from training import train_step

if len(sys.argv) > 1:
    ak.set_compilation_cache_dir(sys.argv[1])
model = ak.nn.Sequential(ak.nn.Linear(16, 32), ak.nn.ReLU(), ak.nn.Linear(32, 4)).to("cpu")
opt = ak.optim.SGD(model.parameters(), lr=0.1)
x = ak.asarray(np.linspace(-1, 1, 128, dtype=np.float32).reshape(8, 16), device="cpu")
y = ak.asarray(np.arange(8) % 4, device="cpu")

step = ak.jit(functools.partial(train_step, model, opt))
losses = [step(x, y).item() for _ in range(3)]
print(json.dumps({"info": ak.compilation_cache_info(), "compiles": step.compile_count,
                  "jax_cache_dir": jax.config.jax_compilation_cache_dir}))
"""


def _run(*args, env=None):
    path = os.pathsep.join([str(_ROOT), str(_ROOT / "tests")])  # arraykit, tests/training.py
    environment = dict(os.environ, PYTHONPATH=path, JAX_PLATFORMS="cpu")
    environment.pop(compilation_cache.ENVIRONMENT_VARIABLE, None)
    environment.update(env or {})
    done = subprocess.run([sys.executable, "-c", _STEP, *args], capture_output=True, text=True,
                          env=environment, cwd=_ROOT, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_second_process_loads_the_programs_the_first_compiled(tmp_path):
    first = _run(str(tmp_path))
    assert first["info"]["hits"] == 0 and first["info"]["misses"] > 0
    assert first["info"]["writes"] == first["info"]["misses"]
    second = _run(str(tmp_path))
    assert second["info"]["hits"] == first["info"]["misses"]  # every program loaded
    assert second["info"]["misses"] == 0
    assert second["compiles"] == first["compiles"]  # traced as before, not compiled
    assert first["jax_cache_dir"] == second["jax_cache_dir"] == jax.config.jax_compilation_cache_dir


def test_the_environment_variable_opts_in(tmp_path):
    env = {compilation_cache.ENVIRONMENT_VARIABLE: str(tmp_path)}
    assert _run(env=env)["info"]["writes"] > 0
    assert _run(env=env)["info"]["misses"] == 0
    assert _run()["info"] == {"hits": 0, "misses": 0, "writes": 0, "errors": 0}  # off by default


@pytest.fixture
def cache_dir(tmp_path):
    previous = ak.get_compilation_cache_dir()
    ak.set_compilation_cache_dir(tmp_path)
    yield tmp_path
    ak.set_compilation_cache_dir(previous)


def test_an_unreadable_entry_is_compiled_again(cache_dir):
    before = ak.compilation_cache_info()
    x = ak.asarray(np.arange(6, dtype=np.float32), device="cpu")
    ak.jit(lambda t: t * 3 + 1)(x)
    written = ak.compilation_cache_info()["writes"] - before["writes"]
    assert written >= 1
    for entry in cache_dir.iterdir():
        entry.write_bytes(b"not a program")
    out = ak.jit(lambda t: t * 3 + 1)(x)
    after = ak.compilation_cache_info()
    assert after["errors"] - before["errors"] == written
    np.testing.assert_array_equal(out.numpy(), np.arange(6) * 3 + 1)


def test_cache_off_leaves_no_files_and_jax_config_alone(tmp_path):
    before = jax.config.jax_compilation_cache_dir
    ak.set_compilation_cache_dir(tmp_path / "made")
    ak.set_compilation_cache_dir(None)
    assert ak.get_compilation_cache_dir() is None
    ak.jit(lambda t: t - 1)(ak.ones(3, device="cpu"))
    assert list((tmp_path / "made").iterdir()) == []
    assert jax.config.jax_compilation_cache_dir == before
