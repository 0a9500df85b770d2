"""The error of the run lifecycle (its own module: the run classes and the frame-field hooks they call both
raise it)."""

__all__ = ["RunError"]


class RunError(ValueError):
    """A run cannot be created, found, renamed or deleted as asked."""
