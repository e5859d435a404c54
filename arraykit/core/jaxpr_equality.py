"""Structural equality of jaxprs: whether two traces describe the same program.

``arraykit.jit`` traces a training step a second time (its first call made the state
later calls read) and that trace usually gives the first program again. Lowering it
only to compare the lowered text costs as much as the first lowering; comparing the
jaxprs costs a walk over their equations.

The test is conservative: two jaxprs are the same when their inputs have the same
types, every equation has the same primitive, the same effects, the same context
(``eqn.ctx``) and equal parameters and reads the corresponding values, and every literal has the same type and bits.
A parameter that cannot be compared (a Python function made by the trace, a JAX
array) counts as different unless it is the very same object, so a "different"
answer can be wrong (the caller then lowers and compares the text) but a "same"
answer is not. Source locations and names are not compared: they change no result.
"""

from __future__ import annotations

import struct

import numpy as np
from jax.extend.core import ClosedJaxpr, Jaxpr, Literal


def same_jaxpr(a, b):
    """Whether the jaxprs ``a`` and ``b`` compute the same thing (conservative)."""
    if a is b:
        return True
    if (len(a.constvars), len(a.invars), len(a.outvars), len(a.eqns)) != (
            len(b.constvars), len(b.invars), len(b.outvars), len(b.eqns)):
        return False
    if a.effects != b.effects:
        return False
    env = {}
    for x, y in zip(a.constvars + a.invars, b.constvars + b.invars):
        if x.aval != y.aval:
            return False
        env[x] = y
    for e, f in zip(a.eqns, b.eqns):
        if (e.primitive is not f.primitive or len(e.invars) != len(f.invars)
                or len(e.outvars) != len(f.outvars) or e.effects != f.effects
                or not _same_context(e, f)):
            return False
        for x, y in zip(e.invars, f.invars):
            if not _same_atom(x, y, env):
                return False
        if not _same_params(e.params, f.params):
            return False
        for x, y in zip(e.outvars, f.outvars):
            if x.aval != y.aval:
                return False
            env[x] = y
    return all(_same_atom(x, y, env) for x, y in zip(a.outvars, b.outvars))


def _same_context(e, f):
    """Whether two equations were traced in the same context (``eqn.ctx``: the PRNG's
    partitioning, compute placement, mesh, XLA metadata, which lowering reads)."""
    a, b = getattr(e, "ctx", None), getattr(f, "ctx", None)
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    fields = getattr(type(a), "__slots__", ())
    fields = [name for name in fields if name != "__weakref__"]
    return bool(fields) and all(
        _same_param(getattr(a, name, None), getattr(b, name, None)) for name in fields)


def _same_atom(x, y, env):
    if isinstance(x, Literal):
        return isinstance(y, Literal) and x.aval == y.aval and _same_value(x.val, y.val)
    return not isinstance(y, Literal) and env.get(x) is y


def _same_params(p, q):
    if p.keys() != q.keys():
        return False
    return all(_same_param(p[k], q[k]) for k in p)


def _same_param(u, v):
    if u is v:
        return True
    if type(u) is not type(v):
        return False
    if isinstance(u, ClosedJaxpr):
        return (len(u.consts) == len(v.consts) and same_jaxpr(u.jaxpr, v.jaxpr)
                and all(_same_value(c, d) for c, d in zip(u.consts, v.consts)))
    if isinstance(u, Jaxpr):
        return same_jaxpr(u, v)
    if isinstance(u, (tuple, list)):
        return len(u) == len(v) and all(map(_same_param, u, v))
    if isinstance(u, dict):
        return _same_params(u, v)
    if isinstance(u, (float, complex, np.ndarray, np.generic)):
        return _same_value(u, v)
    try:
        equal = u == v
    except Exception:  # noqa: BLE001 (not comparable: counted as different)
        return False
    return equal is True


def _same_value(u, v):
    """Same type, dtype, shape and bits (so 0.0 differs from -0.0 and NaN equals
    itself); values on a device are compared by identity only (no host read)."""
    if u is v:
        return True
    if type(u) is not type(v):
        return False
    if isinstance(u, (bool, int, str)):
        return u == v
    if isinstance(u, float):
        return struct.pack("<d", u) == struct.pack("<d", v)
    if isinstance(u, complex):
        return struct.pack("<dd", u.real, u.imag) == struct.pack("<dd", v.real, v.imag)
    if isinstance(u, (np.ndarray, np.generic)):
        return (u.dtype == v.dtype and np.shape(u) == np.shape(v)
                and np.asarray(u).tobytes() == np.asarray(v).tobytes())
    return False
