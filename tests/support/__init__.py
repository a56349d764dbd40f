"""Helpers shared by the test modules (a test module never imports another test module)."""
