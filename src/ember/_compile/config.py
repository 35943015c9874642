"""Settings of ember.compile, under ``torch._dynamo.config``'s names."""


class _Config:
    """``ember._dynamo.config``: ``recompile_limit`` (alias ``cache_size_limit``) is how many
    recordings one compiled function keeps; a call matching none of them once the limit is
    reached runs eagerly."""

    recompile_limit = 8

    @property
    def cache_size_limit(self):
        return self.recompile_limit

    @cache_size_limit.setter
    def cache_size_limit(self, value):
        self.recompile_limit = value


config = _Config()
