"""Helpers shared by the test suites (not tests): workloads and training comparisons,
hand-written IR nodes, small TorchScript graphs, the trace-cost probe."""
