"""Benchmarks: published protocols run with satsim's training, sweeps and exact limits.

- :mod:`satsim.benchmarks.flare`: FLaRe (Butoi et al., ICLR 2025), transformer recognisers on
  its eighteen languages, with the soft model beside its scaled twins and its saturated limit.
"""
