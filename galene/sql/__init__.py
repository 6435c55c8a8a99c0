"""Galene sql package."""
