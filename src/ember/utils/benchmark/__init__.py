"""``ember.utils.benchmark``: timing ember code as ``torch.utils.benchmark`` times torch code.

``Timer`` runs a statement (with ``setup`` and ``globals``) under ``timeit``, with
``blocked_autorange`` / ``adaptive_autorange`` choosing how many runs to time; a
``Measurement`` prints its median, interquartile range and run counts as torch's does, and
``Compare`` lays several out as torch's table. ``Fuzzer`` draws benchmark inputs.
"""
from .utils.common import *  # noqa: F403
from .utils.compare import *  # noqa: F403
from .utils.fuzzer import *  # noqa: F403
from .utils.timer import *  # noqa: F403
