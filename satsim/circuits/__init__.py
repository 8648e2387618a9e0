"""Transformers written as circuits over named residual dimensions: how every model here is built.

What the hand-built constructions (:mod:`satsim.constructions`) and the compiled programs
(:mod:`satsim.rasp`) are both written in, as tracr's craft is for its compiler:

- :mod:`~satsim.circuits.parts`: heads, ReLU neurons and layers over named dimensions;
- :mod:`~satsim.circuits.residual`: dimension names → columns of the weight matrices;
- :mod:`~satsim.circuits.lifting`: the homogeneous form (no residual stream, no biases);
- :mod:`~satsim.circuits.builder`: the parts → a :class:`~satsim.model.spec.ModelSpec`;
- :mod:`~satsim.circuits.schedule`: a compiled program's circuit, each sublayer at the earliest
  slot its reads allow, grouped into blocks.
"""
