"""The errors of the operators: a missing or invalid parameter, and which errors are refusals.

A *refusal* is an error our code raises on purpose for input it does not
take (a parameter out of range, a file that is not there, a run that does
not exist, a dataset busy with another run): its message says what is wrong
and what to do. The App shows a refusal's message in full in the operator's
dialog (:func:`operators.python_call.refusal_response`); every other caller
(Python, ``execute_operator``, a delegated run) gets the exception itself:
a Python call (``foo.get_operator(uri)(dataset, ...)``) the very exception,
of its own type, where ``execute_operator`` gets FiftyOne's ``ExecutionError``
with its text. Any other error is a fault of the code and goes through
FiftyOne's own error path, with its traceback in the server log.

:class:`OperatorInputError` is defined in :mod:`agreement.fo.runs.errors`
(one importable type, whichever copy of this package FiftyOne loaded) and
re-exported here.
"""

from __future__ import annotations

from agreement.fo.runs.errors import OperatorInputError
from agreement.fo.runs.locking import LockTimeout

__all__ = ["REFUSALS", "REFUSED", "OperatorInputError", "is_refusal", "refusal_text"]

#: What our code raises for input it does not take: bad values and layouts (``ValueError``, which
#: :class:`agreement.fo.runs.errors.RunError`, ``AnnotationError``, ``ReviewError`` ... are), files that
#: are not there or cannot be read (``OSError``), and a dataset whose lock another run holds.
REFUSALS: tuple[type[BaseException], ...] = (ValueError, OSError, LockTimeout)

#: The key of an operator's result that carries a refusal's message to the App (shown by
#: :func:`operators.outputs.refusal_property`).
REFUSED = "refused"


def is_refusal(error: BaseException) -> bool:
    """Whether ``error`` is a refusal (:data:`REFUSALS`), not a fault of the code."""
    return isinstance(error, REFUSALS)


def refusal_text(error: BaseException) -> str:
    """The message a user reads: the error's own text (its type's name when it has none; an ``OSError``'s
    file name with its reason)."""
    if isinstance(error, OSError) and error.filename is not None and error.strerror:
        return f"{error.strerror}: {error.filename}"
    return str(error) or type(error).__name__
