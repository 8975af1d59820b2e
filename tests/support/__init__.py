"""What the tests share that is not a fixture: one module per role, imported as ``support.<role>``.

Fixtures live in the ``conftest.py`` files; a test module imports helpers from here, never from
``conftest`` or from another test module (``tests/test_support.py`` checks). ``benchmarks/`` imports
nothing from ``tests/``: what both need lives in ``src/`` or ``benchmarks/``.
"""
