"""The tensor layer: the strided ``Tensor`` type (``tensor_type``: views, in-place
writes, the operators), the resolution of operands and written values into what
kernels take (``operands``), the parsing of indexing keys (``indexing_keys``), and the
registry through which the operators reach the namespace above
(``namespace_registry``).

May import: :mod:`arraykit.core`, :mod:`arraykit.kernels`.
"""
