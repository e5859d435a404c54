"""Public names for functions that factories make (``zeros``, ``sum``, ``fft``, ...)."""


def named(function, name, doc):
    """``function`` under the public ``name`` (its ``__name__`` and ``__qualname__``) with
    the docstring ``doc``, as ``help()``, :mod:`inspect` and the API reference show it."""
    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    return function
