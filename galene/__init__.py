"""Galene: a real-time analytical warehouse in the shape of Apache Doris, with Spark underneath.

The version strings below are the one home of every version Galene reports. Clients parse
Doris' shapes exactly (doris-mcp-server reads `doris-X.Y.Z[-rcN][-<hex hash>]` followed by a
space, '(' , ',' or the end, and disables its tools on anything else), so each is answered in the
shape Doris gives it; Galene's own version goes only where Doris has free text.
"""

import hashlib

__version__ = "0.1.0"

# The Doris release whose interfaces Galene answers.
DORIS_RELEASE = "4.1.0"
# The MySQL server version: the handshake, @@version and VERSION() (Doris: fixed "5.7.99").
DORIS_COMPAT_VERSION = "5.7.99"
# Doris' Version.DORIS_BUILD_VERSION and DORIS_BUILD_SHORT_HASH (the git short hash of its
# build). Galene's stand-in for the hash is fixed per Galene release, hex as parsers expect.
DORIS_BUILD_VERSION = f"doris-{DORIS_RELEASE}"
DORIS_BUILD_SHORT_HASH = hashlib.sha1(f"galene-{__version__}".encode()).hexdigest()[:10]
# SHOW FRONTENDS / SHOW BACKENDS `Version`: "doris-4.1.0-<hash>", as Doris' nodes report theirs.
NODE_VERSION = f"{DORIS_BUILD_VERSION}-{DORIS_BUILD_SHORT_HASH}"
# @@version_comment (GlobalVariable.versionComment): "Doris version doris-4.1.0-<hash>".
VERSION_COMMENT = f"Doris version {NODE_VERSION}"
# Free text in Doris' /api/fe_version_info (dorisBuildInfo, where Doris has its builder's
# user@host): here Galene says what it is.
BUILD_INFO = f"Galene {__version__}"
