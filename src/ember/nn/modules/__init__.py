"""Layers: every file lists its modules in __all__; ember.nn exports their union."""
from .module import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .container import *  # noqa: F401,F403
from .activation import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .flatten import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .distance import *  # noqa: F401,F403
from .padding import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .transformer import *  # noqa: F401,F403
from .lazy import *  # noqa: F401,F403
from .sync_batchnorm import *  # noqa: F401,F403
from .adaptive import *  # noqa: F401,F403
from .linear_cross_entropy import *  # noqa: F401,F403


def __getattr__(name):
    # torch.nn.modules.utils (_pair, ...), loaded on first use: imported here it would be
    # exported by ember.nn's ``from .modules import *`` in place of ember.nn.utils
    if name == "utils":
        import importlib
        return importlib.import_module(f"{__name__}.utils")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
