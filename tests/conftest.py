"""Test session setup.

SciPy reads SCIPY_ARRAY_API once, when first imported, and scikit-learn's
array API dispatch requires it: set it before anything imports SciPy.
"""

import os

os.environ.setdefault("SCIPY_ARRAY_API", "1")
