"""The replay runner's pure core: datasets, canonical requests, outputs, assertions and judges.

Nothing in this package does network or cache I/O; the run command wires these pieces to the
caching client and the reporters. Modules here import only the standard library and the
foundation, so importing them stays cheap.
"""
