"""Scan and Snap (Tian et al. 2023): attention dynamics of a one-layer transformer, measured.

NumPy modules (``data``, ``measures``, ``saturation``, ``snap``, ``report``) import without torch;
``model``, ``sgd`` and ``train`` need torch (``grid`` and ``trace`` import it when they run) and
``plots`` needs matplotlib. Import those by module.
"""

from satsim.scansnap.data import Batch, Task, sample_batch
from satsim.scansnap.measures import composition, distinct_entropy, entropy
from satsim.scansnap.snap import snap_point

__all__ = ["Batch", "Task", "composition", "distinct_entropy", "entropy", "sample_batch",
           "snap_point"]
