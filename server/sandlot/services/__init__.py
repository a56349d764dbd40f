"""Orchestration services."""
