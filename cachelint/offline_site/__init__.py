"""The directory `cachelint run` puts first on a replayed command target's PYTHONPATH.

Its `sitecustomize` keeps Python children offline (`cachelint.runner.childguard`); it is a package
only so that it ships with cachelint.
"""
