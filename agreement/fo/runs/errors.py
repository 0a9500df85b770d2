"""The error of the run lifecycle (its own module: the run classes and the frame-field hooks they call both
raise it), and the error of an operator parameter (here, not in ``operators/``, so that Python callers catch
it by one importable type whichever copy of the operators FiftyOne loaded)."""

__all__ = ["OperatorInputError", "RunError"]


class RunError(ValueError):
    """A run cannot be created, found, renamed or deleted as asked."""


class OperatorInputError(ValueError):
    """A parameter of an operator is missing or invalid; the message says which and why."""
