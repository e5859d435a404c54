"""The process group: one process per host (or per accelerator) on JAX's
multi-process runtime, initialised as PyTorch's ``init_process_group`` is.

Where the processes meet comes from the arguments, else from torchrun's
environment (``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``,
``LOCAL_RANK``; set by ``python -m arraykit.distributed.run``), else from JAX's
own (``JAX_COORDINATOR_ADDRESS``, ``JAX_NUM_PROCESSES``, ``JAX_PROCESS_ID``).
With none of them, or a world of one, the group is this process alone and JAX's
runtime is not started. A JAX runtime the user started (``jax.distributed.initialize``)
is adopted as it is.
"""

from __future__ import annotations

import datetime
import os

import jax

from .rendezvous import meet

__all__ = [
    "init_process_group", "destroy_process_group", "is_initialized", "is_available",
    "get_rank", "get_world_size", "get_local_rank", "get_backend",
]

_DEFAULT_TIMEOUT_S = 300.0  # JAX's initialization timeout
_BACKENDS = ("gloo", "nccl")


class _Group:
    """The state of the one (default) process group."""

    def __init__(self, backend, rank, world_size, local_rank, started_runtime):
        self.backend = backend
        self.rank = rank
        self.world_size = world_size
        self.local_rank = local_rank
        self.started_runtime = started_runtime


_group = None


def is_available():
    """Whether arraykit.distributed can be used (always: it is JAX's runtime)."""
    return True


def is_initialized():
    """Whether :func:`init_process_group` has run (and :func:`destroy_process_group` not since)."""
    return _group is not None


def _current():
    if _group is None:
        raise ValueError(
            "Default process group has not been initialized, please make sure to call "
            "arraykit.distributed.init_process_group()"
        )
    return _group


def get_rank(group=None):
    """This process's rank in ``[0, world_size)`` (``jax.process_index()``)."""
    _no_subgroups(group)
    return _current().rank


def get_world_size(group=None):
    """The number of processes (``jax.process_count()``)."""
    _no_subgroups(group)
    return _current().world_size


def get_local_rank():
    """This process's rank among the processes of its host (``LOCAL_RANK``; 0 when unset)."""
    return _current().local_rank


def get_backend(group=None):
    """The collectives' backend name: ``'gloo'`` (CPU) or ``'nccl'`` (GPU)."""
    _no_subgroups(group)
    backend = _current().backend
    if backend is None:
        return "gloo" if jax.default_backend() == "cpu" else "nccl"
    return backend


def _no_subgroups(group):
    if group is not None:
        raise ValueError("arraykit.distributed has only the default group; pass group=None")


def _seconds(timeout):
    if timeout is None:
        return _DEFAULT_TIMEOUT_S
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    return float(timeout)


def _backend_name(backend):
    """The backend asked for: ``'gloo'``, ``'nccl'``, or None (the platform's, known
    once JAX's backends have started)."""
    if backend is None:
        return None
    name = str(backend).lower()
    if name not in _BACKENDS:
        raise ValueError(f"init_process_group: unknown backend {backend!r}; expected one of {_BACKENDS} or None")
    return name


def _env_int(name):
    value = os.environ.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"init_process_group: environment variable {name}={value!r} is not an integer") from None


def _where(init_method, world_size, rank):
    """``(host, port or None, world_size, rank)`` from the arguments and the environment."""
    host = port = None
    if init_method is not None and init_method != "env://":
        if not init_method.startswith("tcp://"):
            raise ValueError(f"init_process_group: init_method must be 'env://' or 'tcp://host:port', got {init_method!r}")
        host, _, port = init_method[len("tcp://"):].rpartition(":")
        port = int(port)
    else:
        host = os.environ.get("MASTER_ADDR")
        port = _env_int("MASTER_PORT")
    if world_size is None or world_size < 0:
        world_size = _env_int("WORLD_SIZE")
    if rank is None or rank < 0:
        rank = _env_int("RANK")
    return host, port, world_size, rank


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1):
    """Join the processes of a job into one group on JAX's multi-process runtime.

    ``backend``: ``'gloo'`` (collectives on the CPU, set as JAX's
    ``jax_cpu_collectives_implementation``), ``'nccl'`` (GPUs), or None to pick by
    platform. ``init_method``: ``'env://'`` (the default: ``MASTER_ADDR`` and
    ``MASTER_PORT``) or ``'tcp://host:port'``. ``world_size`` and ``rank`` default
    to ``WORLD_SIZE`` and ``RANK``. ``timeout`` (seconds or a ``timedelta``, 300 s
    by default) bounds the wait for every process: a missing peer raises
    RuntimeError then. Call it before any tensor is made (JAX's runtime must start
    before its backends). One process (no environment, or a world size of 1)
    starts nothing; every function of :mod:`arraykit.distributed` then works on it.
    """
    global _group
    if _group is not None:
        raise ValueError("trying to initialize the default process group twice!")
    name = _backend_name(backend)
    seconds = _seconds(timeout)
    if jax.distributed.is_initialized():
        _group = _Group(name, jax.process_index(), jax.process_count(), _local_rank(), False)
        return
    host, port, world_size, rank = _where(init_method, world_size, rank)
    if world_size is None and rank is None and host is None:
        if os.environ.get("JAX_COORDINATOR_ADDRESS"):  # JAX's own environment
            _start(name, None, None, None, seconds)
            _group = _Group(name, jax.process_index(), jax.process_count(), _local_rank(), True)
            return
        world_size, rank = 1, 0
    if world_size is None or rank is None:
        raise ValueError(
            f"init_process_group: rank ({rank}) and world_size ({world_size}) must both be given "
            "(arguments, or RANK and WORLD_SIZE in the environment)"
        )
    if not 0 <= rank < world_size:
        raise ValueError(f"init_process_group: rank {rank} is outside [0, world_size={world_size})")
    if world_size == 1:
        _group = _Group(name, 0, 1, _local_rank(), False)
        return
    if host is None or port is None:
        raise ValueError(
            f"init_process_group: {world_size} processes need the address of rank 0: "
            "MASTER_ADDR and MASTER_PORT in the environment, or init_method='tcp://host:port'"
        )
    meet(host, port, world_size, rank, seconds)
    _start(name, f"{host}:{port}", world_size, rank, seconds)
    _group = _Group(name, rank, world_size, _local_rank(), True)


def _local_rank():
    return _env_int("LOCAL_RANK") or 0


def _start(backend, address, world_size, rank, seconds):
    if backend != "nccl":  # gloo for the CPU's collectives (set before the backends start)
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    try:
        jax.distributed.initialize(
            coordinator_address=address, num_processes=world_size, process_id=rank,
            initialization_timeout=max(int(seconds), 1),
        )
    except RuntimeError as e:
        raise RuntimeError(
            f"init_process_group: JAX's runtime did not start ({e}). It must start before "
            "JAX's backends: call init_process_group before making any tensor"
        ) from e


def destroy_process_group(group=None):
    """Leave the group: JAX's runtime is shut down when this module started it.
    (JAX's backends cannot start again in this process afterwards.)"""
    global _group
    _no_subgroups(group)
    current = _current()
    _group = None
    if current.started_runtime:
        jax.distributed.shutdown()
