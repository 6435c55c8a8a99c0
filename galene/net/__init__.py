"""Galene net package."""
