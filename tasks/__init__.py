"""Thin Prefect tasks around the pure pipeline steps."""
