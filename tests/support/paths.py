"""The repository's folders that tests read (examples, fixtures, bench models), by absolute path."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
EXAMPLES = REPO / "examples"
BENCH = REPO / "bench"
