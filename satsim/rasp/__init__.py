"""RASP-family programs (C-RASP, B-RASP): their meaning, and compilers into saturated transformers.

The compiled models are exact at every length up to a stated float64 bound.
"""
