"""reclaimlab: a laboratory for Linux page reclaim (simulate, live, report)."""

__version__ = "0.1.0"
