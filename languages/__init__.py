"""Formal languages with exact samplers, oracle-checked negatives and next-symbol sets."""

from languages import answers, regular_suite, tomita  # noqa: F401  (they register languages)
from languages.base import EOS, Language, LanguageError
from languages.binary import BINARY_ADDITION, BINARY_MULTIPLICATION, COMPUTE_SQRT
from languages.blocks import Blocks
from languages.dyck import Dyck
from languages.dyck1 import DYCK1, Dyck1, depth, depth_profile, max_depth
from languages.majority import Majority
from languages.pcfg import sample_critical_pcfg
from languages.registry import get, names, register, register_family
from languages.regular import RegularLanguage, dfa_graph
from languages.reset_dyck import ResetDyck1
from languages.shuffle import ShuffleDyck
from languages.stack import STACK_MANIPULATION
from languages.transforms import (
    BUCKET_SORT,
    MARKED_COPY,
    MARKED_REVERSAL,
    ODDS_FIRST,
    MissingDuplicate,
    UnmarkedReversal,
)

for _language in (
    Dyck(2),
    Dyck(3),
    *(Dyck(k, m) for k, m in ((2, 3), (2, 5), (2, 10), (3, 3), (3, 5))),
    ShuffleDyck(2),
    ShuffleDyck(3),
    Blocks("ab"),
    Blocks("abc"),
    Blocks("abcd"),
    Majority(),
    ResetDyck1(),
    STACK_MANIPULATION,
    MARKED_REVERSAL,
    UnmarkedReversal(),
    MARKED_COPY,
    MissingDuplicate(),
    ODDS_FIRST,
    BUCKET_SORT,
    BINARY_ADDITION,
    BINARY_MULTIPLICATION,
    COMPUTE_SQRT,
):
    register(_language)
register_family(r"dyck-([1-4])-(\d+)", Dyck, "dyck-K-M (K = 1..4 bracket types, depth M = 1..1000)")
register_family(r"shuffle-dyck([2-4])-(\d+)", ShuffleDyck, "shuffle-dyckK-M (depth M per type)")

__all__ = [
    "DYCK1",
    "EOS",
    "Blocks",
    "Dyck",
    "Dyck1",
    "Language",
    "LanguageError",
    "Majority",
    "RegularLanguage",
    "ResetDyck1",
    "ShuffleDyck",
    "dfa_graph",
    "depth",
    "depth_profile",
    "get",
    "max_depth",
    "names",
    "register",
    "register_family",
    "sample_critical_pcfg",
]
