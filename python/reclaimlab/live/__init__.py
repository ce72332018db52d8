"""Live runs: the scenarios' workloads on this machine's kernel, written as run directories.

`KernelBackend` (backend.py) is the machine; `FakeBackend` (fake.py) its recorded stand-in.
"""
