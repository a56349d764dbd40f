"""Traces, metrics and logs (issue #5)."""
