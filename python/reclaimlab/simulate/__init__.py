"""Placeholder so this branch's CLI imports; the simulator package replaces it on merge."""
