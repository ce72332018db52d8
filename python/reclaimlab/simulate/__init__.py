"""Simulated runs: scenarios in, run directories out, through the Rust core."""
