"""ember's differential test against torch: random autograd programs, run in both libraries.

A seeded generator (``gen.py``) writes programs that mix ops from the catalog
(``catalog.py``), views, in-place updates (also through views), tensor and node hooks,
``retain_grad``, grad modes, ``backward`` / ``autograd.grad`` with ``retain_graph`` and
``create_graph`` and error cases. Each program is one text, executed with ``torch`` and with
``ember`` in its place (``runner.py``); what a user could observe (values, gradients, dtypes,
shapes, ``requires_grad`` / ``is_leaf`` / ``_version``, grad_fn and next_functions names,
hook calls, exceptions and warnings) is compared. A disagreement is shrunk to a small
reproducer (``check.py``). ``python -m tests.difftest`` runs a long campaign; see
docs/difftest.md.
"""
