"""Numba kernels: plain-array signatures, one module per idea, each beside a NumPy reference."""
