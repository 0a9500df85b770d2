"""The error of a missing or invalid operator parameter (shared by every operator module)."""

from __future__ import annotations

__all__ = ["OperatorInputError"]


class OperatorInputError(ValueError):
    """A parameter is missing or invalid; the message says which and why."""
