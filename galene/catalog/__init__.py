"""Galene catalog package."""
