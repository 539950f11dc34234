"""Scoring answers: parsing, the FM/CM scorers, the original rule, failure classes, chained episodes."""
