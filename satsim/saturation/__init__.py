"""The saturated limit of a spec: degrees, the leading-order network, the exact limit.

- ``network_graph(spec)`` / ``degrees(spec)``: the network graph (networkx) with each node's degree
  of homogeneity by the rules of Merrill et al. 2021, Table 1.
- ``limit(spec)``: the leading-order ModelSpec (terms below their sum's degree dropped), to run
  with saturated attention; a pre-LN limit keeps the skip connection at some sublayers only,
  which the spec's per-sublayer ``residual`` flags express. ``leading_order(spec)`` also reports
  what was dropped, and ``run_limit`` runs it directly.
- ``exact_limit(spec, string)``: the limit by asymptotic expansion in c, with findings where the
  leading-order network is not the limit (tie sets split by lower-order terms, vanishing terms),
  and NaN (an ``undetermined`` finding) where the terms it tracks cannot decide.
- ``limit_signs(spec, strings)``: which decisions the saturated model makes, fast and checked:
  the leading-order network in the compiled engine, the exact expansion where that run shows it
  is not the limit. ``limit_argmax(spec, inputs)``: a categorical model's answer in the limit,
  the label of the largest logit per position (None where undetermined), checked the same way.
- The measures of how close a soft model is to its limit live in ``satsim.analysis.measures``
  (they run the torch soft twin).
"""

from satsim.model.degrees import degrees, dropped_terms, growth_exponent, network_graph
from satsim.model.safety import check_scale, max_safe_scale
from satsim.model.scaling import parse_rates, rated, scale_spec
from satsim.saturation.exact import ExactLimit, Finding, exact_limit
from satsim.saturation.limit import LeadingOrder, leading_order, limit
from satsim.saturation.run import LimitRun, run_limit
from satsim.saturation.signs import LimitPredictor, LimitSigns, limit_argmax, limit_signs

__all__ = [
    "ExactLimit",
    "Finding",
    "LeadingOrder",
    "LimitPredictor",
    "LimitRun",
    "LimitSigns",
    "check_scale",
    "degrees",
    "dropped_terms",
    "exact_limit",
    "growth_exponent",
    "leading_order",
    "limit",
    "limit_argmax",
    "limit_signs",
    "max_safe_scale",
    "network_graph",
    "parse_rates",
    "rated",
    "run_limit",
    "scale_spec",
]
