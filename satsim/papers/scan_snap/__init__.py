"""Scan and Snap (Tian et al. 2023): attention dynamics of a one-layer transformer, measured.

NumPy modules (``data``, ``measures``, ``saturation``, ``snap``, ``report``) import without torch;
``model``, ``sgd`` and ``train`` need torch (``grid`` and ``trace`` import it when they run) and
``plots`` needs matplotlib. Import those by module.
"""

from satsim.papers.scan_snap.data import Batch, Task, sample_batch
from satsim.papers.scan_snap.measures import composition, distinct_entropy, entropy
from satsim.papers.scan_snap.snap import snap_point

__all__ = ["Batch", "Task", "composition", "distinct_entropy", "entropy", "sample_batch",
           "snap_point"]
