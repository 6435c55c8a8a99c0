"""Galene be package."""
