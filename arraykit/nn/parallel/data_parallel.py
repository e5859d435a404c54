"""``DataParallel``: PyTorch's single-process data parallelism wrapper.

PyTorch's ``DataParallel`` splits each batch over the GPUs of one process, runs a
replica of the module on each and gathers the outputs on ``output_device``; with one
device (or none) it calls the module itself. arraykit runs one program per call over
JAX's devices: a batch spread over several devices is a sharded tensor (see
:class:`~arraykit.nn.parallel.DistributedDataParallel` and ``arraykit.distributed``),
and a jitted step runs data-parallel over it without replicas. So ``DataParallel``
here calls the wrapped module (the one-device behaviour), with PyTorch's attributes,
so model code written for it runs unchanged."""

from __future__ import annotations

from ..module import Module

__all__ = ["DataParallel"]


class DataParallel(Module):
    """``DataParallel(module, device_ids=None, output_device=None, dim=0)``: calls
    ``module`` on the whole batch (see the module docstring); ``self.module`` is the
    wrapped module, as in PyTorch, so its ``state_dict`` keys start with ``module.``."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids = list(device_ids) if device_ids is not None else []
        self.output_device = output_device if output_device is not None else (
            self.device_ids[0] if self.device_ids else None)
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        """The wrapped module's output for ``inputs``."""
        return self.module(*inputs, **kwargs)
