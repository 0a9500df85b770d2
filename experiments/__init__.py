"""Validation experiments (run with ``make experiments``); ``common`` is shared with the test suite."""
