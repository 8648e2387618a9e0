"""Errors that reach the user as one-line messages.

``SatsimError`` is the one class of user error in satsim; the ``languages`` package (which never
imports satsim) has its own, ``LanguageError``. Neither is a ``ValueError``: a ``ValueError`` (or
any other exception) raised inside satsim is a bug, and the command line keeps its traceback.
"""


class SatsimError(Exception):
    """A problem with the user's input that satsim reports in one line."""


class SpecError(SatsimError):
    """A model specification that is malformed: wrong shape, dtype or non-finite value."""


class WeightsFileError(SatsimError):
    """A weights file that cannot be read or does not describe a valid model."""


def first_line(error: BaseException) -> str:
    """The first line of an exception's message, or its type's name when it has none."""
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__
