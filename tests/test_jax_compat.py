"""The JAX internals arraykit uses have public fallbacks that agree with them."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from arraykit.core import jax_compat


def _both():
    return jax_compat.trace_state_clean(), jax_compat.no_trace_active()


def test_no_trace_active_agrees_with_jax_flag_outside_and_inside_traces():
    seen = {}

    def probe(x):
        seen["inside"] = _both()
        return x * 2

    assert _both() == (True, True)
    jax.jit(probe)(1.0)
    assert seen["inside"] == (False, False)
    jax.vmap(probe)(jnp.ones(3))
    assert seen["inside"] == (False, False)
    jax.grad(probe)(1.0)
    assert seen["inside"] == (False, False)


@pytest.mark.parametrize("n_consts", [0, 2])
def test_eval_jaxpr_runs_a_traced_program_on_new_inputs(n_consts):
    consts = [np.float32(3.0), np.float32(4.0)][:n_consts]

    def f(x, *c):
        return jnp.sin(x) + sum(c, 0.0)

    closed = jax.make_jaxpr(f)(np.ones(3, np.float32), *consts)
    jaxpr = closed.jaxpr
    x = np.linspace(0, 1, 3, dtype=np.float32)
    # the traced inputs are (x, *c); bind c through the jaxpr's invars instead of consts
    out = jax_compat.eval_jaxpr(jaxpr, closed.consts, x, *consts)
    np.testing.assert_allclose(np.asarray(out[0]), np.sin(x) + sum(consts, 0.0), rtol=1e-6)


@pytest.mark.parametrize("x64", [False, True])
@pytest.mark.parametrize("dtype", ["float64", "int64", "uint64", "complex128", "float32", "float16",
                                   "bfloat16", "int8", "bool"])
def test_put_on_device_gives_device_puts_array(dtype, x64):
    """The fast transfer makes what ``jax.device_put`` makes: dtype (64-bit values
    converted where JAX's configuration converts them), shape, sharding, committed,
    weak type and values."""
    import ml_dtypes

    np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    values = (np.arange(6) % 3).astype(np_dtype).reshape(2, 3)
    device = jax.devices("cpu")[0]
    with jax.enable_x64(x64):
        ours, theirs = jax_compat.put_on_device(values.copy(), device), jax.device_put(values.copy(), device)
    assert (ours.dtype, ours.shape, ours.sharding, ours.committed, ours.weak_type) == (
        theirs.dtype, theirs.shape, theirs.sharding, theirs.committed, theirs.weak_type)
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


def test_put_on_device_inside_traces_under_guards_and_for_other_dtypes():
    """Inside a JAX trace a tensor made from host values is the trace's own (written in
    place without the leak error); a transfer guard sees an explicit transfer; a
    big-endian array gets ``jax.device_put``'s TypeError, not wrong values."""
    import arraykit as ak

    host = np.arange(4, dtype=np.float32)

    def body(x):
        t = ak.asarray(host)
        t += x
        return t

    np.testing.assert_array_equal(np.asarray(jax.jit(body)(ak.ones(4, device="cpu"))), host + 1)
    with jax.transfer_guard_host_to_device("disallow"):
        np.testing.assert_array_equal(np.asarray(ak.asarray(host, device="cpu")), host)
    with pytest.raises(TypeError, match=">f4"):
        jax_compat.put_on_device(np.arange(3, dtype=">f4"), jax.devices("cpu")[0])
