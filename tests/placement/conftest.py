"""Make ``placement_builders`` importable under ``--import-mode=importlib``."""

import os
import sys

_HERE = os.path.dirname(__file__)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
