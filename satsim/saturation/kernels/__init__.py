"""The limit's Numba kernels, each beside the NumPy statement the tests hold it to."""
