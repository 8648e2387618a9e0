"""Reference semantics in plain NumPy: readable, quadratic, the meaning the kernels must match."""
