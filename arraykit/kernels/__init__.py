"""Kernels: pure JAX functions compiled with ``jax.jit`` and the launcher that runs
them on storages. ``strided`` lowers strided reads and writes, ``bodies`` holds the
element-wise bodies, ``ordering`` the total orders sorting and searching use,
``launch`` compiles, caches and runs kernels (``apply``, ``apply_inplace``), and
``export`` reads a tensor's values out of its storage (dense values, NumPy views,
DLPack).

May import: :mod:`arraykit.core`. The tensor class and autograd's recorder are
registered with ``launch`` by the layers above, never imported.
"""
