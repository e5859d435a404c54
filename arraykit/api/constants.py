"""Constants of the array API: ``e``, ``inf``, ``nan``, ``newaxis``, ``pi``."""

import math

__all__ = ["e", "inf", "nan", "newaxis", "pi"]

e = math.e
inf = math.inf
nan = math.nan
newaxis = None
pi = math.pi
