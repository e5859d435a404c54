"""einops on arraykit: the backend that lets ``einops.rearrange``, ``reduce``,
``repeat``, ``einsum``, ``pack`` and ``unpack`` take tensors
(:mod:`arraykit.einops.backend`), and einops' layers ``Rearrange``, ``Reduce`` and
``EinMix`` as modules (:class:`arraykit.nn.Module`) in :mod:`arraykit.einops.layers`,
the counterpart of ``einops.layers.torch``.

einops is optional (``pip install arraykit[einops]``): ``import arraykit`` imports
this package, layers included, only where einops is installed; importing it without
einops raises ``ImportError`` saying so.
"""

try:
    import einops as _einops  # noqa: F401 (the dependency check)
except ImportError as e:
    raise ImportError(
        "arraykit.einops needs the einops package: pip install einops (or arraykit[einops])"
    ) from e

from . import backend, layers
from .backend import ArraykitBackend

__all__ = ["ArraykitBackend", "backend", "layers"]
