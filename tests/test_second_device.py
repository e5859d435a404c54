"""Placement with two devices on the CPU machine: a process with two CPU devices whose
default device is the second, as a GPU machine's default device is not the CPU.
Tensors made on the first device must keep their work there (gradients, copies,
reads), as PyTorch keeps a CPU model's work on the CPU when CUDA is the default.
Defects first seen on a GPU (issue 28) are reproduced here without one."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import jax
    import numpy as np
    import arraykit as ak

    first, second = jax.devices()
    results = []
    with jax.default_device(second):
        assert ak.ones(1).device == second
        # backward() of a scalar on the first device: the implicit gradient is made there
        x = ak.asarray(np.arange(3.0), device=first).requires_grad_()
        (x * 2).sum().backward()
        results.append(("implicit gradient", x.grad.device == first, x.grad.tolist()))
        # a NumPy gradient goes to the output's device; a tensor on another device raises
        (x * 3).backward(np.ones(3))
        results.append(("numpy gradient", x.grad.device == first, x.grad.tolist()))
        try:
            (x * 3).backward(ak.ones(3))
            results.append(("gradient on another device", False, "no error"))
        except RuntimeError as e:
            results.append(("gradient on another device", "expected device cpu:0 but got cpu:1" in str(e),
                            str(e)))
        # copy_ moves a source on another device, as PyTorch's
        y = ak.zeros(3)
        y.copy_(ak.arange(3.0, device=first))
        results.append(("copy_", y.device == second, y.tolist()))
        # a state dict saved on the first device loads into a model on the second
        model = ak.nn.Linear(2, 2)
        state = {k: v.to(first) for k, v in model.state_dict().items()}
        with ak.no_grad():
            state["weight"].fill_(0.5)
        model.load_state_dict(state)
        results.append(("load_state_dict", model.weight.device == second, model.weight.tolist()))
    for name, ok, detail in results:
        print(name, ok, detail)
""")


def test_work_stays_on_a_tensor_device_that_is_not_the_default():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 5, done.stdout
    assert lines == [
        "implicit gradient True [2.0, 2.0, 2.0]",
        "numpy gradient True [5.0, 5.0, 5.0]",
        "gradient on another device True invalid gradient at index 0 - expected device cpu:0 but got cpu:1",
        "copy_ True [0.0, 1.0, 2.0]",
        "load_state_dict True [[0.5, 0.5], [0.5, 0.5]]",
    ], done.stdout
