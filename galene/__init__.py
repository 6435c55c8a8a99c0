"""Galene: a real-time analytical warehouse in the shape of Apache Doris, with Spark underneath."""

__version__ = "0.1.0"
# What SELECT VERSION() and SHOW BACKENDS report; Doris clients parse the "doris-" part.
DORIS_COMPAT_VERSION = "5.7.99"
# Doris tools parse "Doris version doris-X.Y.Z" out of @@version_comment.
VERSION_COMMENT = f"Doris version doris-4.1.0-galene-{__version__} (Galene)"
