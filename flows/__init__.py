"""Prefect flows composed from tasks/."""
