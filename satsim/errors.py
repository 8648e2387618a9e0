"""Errors that reach the user as one-line messages."""


class SatsimError(ValueError):
    """A problem with the user's input that satsim reports in one line."""


class SpecError(SatsimError):
    """A model specification that is malformed: wrong shape, dtype or non-finite value."""


class WeightsFileError(SatsimError):
    """A weights file that cannot be read or does not describe a valid model."""
