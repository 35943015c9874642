"""ember.compile: record a function's kernel calls once, replay them on new arrays.

``hooks`` holds the few points outside the op registry that the recorder must see (it is
imported by core modules, so this package stays empty of anything heavier).
"""
