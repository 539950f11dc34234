"""Runs and their directories: the run loop, one split, tiers, reuse, subsets, options and results."""
