"""The memory model, the lowest layer: dtypes and promotion (``dtypes``), pure
layout math (``layout``, no JAX), storages and their buffers (``storage``,
``buffer_pool`` for recycling large CPU buffers, ``host_memory`` for storages over
NumPy memory), devices and host-device transfers (``devices``), the 64-bit
scope arraykit's own tracing runs in (``x64``), and the few JAX internals arraykit
uses, with public fallbacks (``jax_compat``).

May import: nothing else in arraykit (only each other, without cycles).
"""
