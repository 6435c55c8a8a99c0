"""The Galene dialect's grammar of users and privileges: CREATE/ALTER/DROP USER, SET PASSWORD,
CREATE/ALTER/DROP ROLE, GRANT/REVOKE (privileges or roles), SHOW [ALL] GRANTS and SHOW ROLES,
read into `nodes.AccountStatement` and printed back as Doris SQL (a clear password as '***').

Parser and generator mixins of `galene.sql.dialect.Galene` (they run on its Parser and
Generator); the statements' meaning is `galene.sql.statements.account` and galene/fe/auth.py.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.tokens import TokenType

from galene.sql import nodes


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


class AccountParser:
    """Parser rules of the user and role statements (mixed into `Galene.Parser`)."""

    def _parse_account_statement(self) -> exp.Expr | None:
        """Doris' user/role statements, or None (nothing consumed) for any other statement."""
        words = [tok.text.upper() for tok in self._tokens[self._index : self._index + 3]]
        if len(words) > 1 and words[0] in ("CREATE", "ALTER", "DROP") and words[1] in ("USER", "ROLE"):
            self._advance(2)
            return self._parse_user_or_role(f"{words[0]} {words[1]}")
        if words[:2] == ["SET", "PASSWORD"] and self._tokens[self._index + 1].token_type != TokenType.STRING:
            self._advance(2)
            return self._parse_set_password()
        if words[:1] in (["GRANT"], ["REVOKE"]):
            self._advance()
            return self._parse_grant(words[0])
        if words[:2] == ["SHOW", "GRANTS"] or words == ["SHOW", "ALL", "GRANTS"]:
            all_ = words[1] == "ALL"
            self._advance(3 if all_ else 2)
            user = self._parse_user_identity() if self._match_text_seq("FOR") else None
            return self.expression(nodes.AccountStatement(this="SHOW GRANTS", user=user, all=all_))
        if words[:2] == ["SHOW", "ROLES"]:
            self._advance(2)
            return self.expression(nodes.AccountStatement(this="SHOW ROLES"))
        return None

    def _parse_account_name(self, what: str) -> str:
        """A user or role name: 'quoted', `backquoted` or bare."""
        if self._match(TokenType.STRING):
            return self._prev.text
        name = self._parse_id_var(any_token=False)
        if name is None:
            self.raise_error(f"Expected a {what} name")
        return name.name

    def _parse_user_identity(self) -> exp.Expr:
        name = self._parse_account_name("user")
        host = None
        if self._match(TokenType.PARAMETER):  # '@'
            if self._match(TokenType.L_BRACKET):
                self.raise_error("Galene does not support domain user identities ('user'@['domain'])")
            if self._match(TokenType.STRING) or self._match(TokenType.MOD):
                host = self._prev.text
            else:
                host_id = self._parse_id_var(any_token=False)
                if host_id is None:
                    self.raise_error("Expected a host after '@'")
                host = host_id.name
        return self.expression(nodes.UserIdentity(this=name, host=host))

    def _parse_password_spec(self, args: dict) -> None:
        """`IDENTIFIED BY [PASSWORD] 'text'` (PASSWORD: the text is the stored hash)."""
        if self._match_text_seq("IDENTIFIED", "BY"):
            hashed = self._match_text_seq("PASSWORD")
            if not self._match(TokenType.STRING):
                self.raise_error("Expected a quoted password after IDENTIFIED BY")
            args["hashed" if hashed else "password"] = self._prev.text

    def _parse_user_or_role(self, what: str) -> exp.Expr:
        args: dict = {"this": what}
        verb, kind = what.split()
        if verb == "CREATE":
            args["exists"] = self._match_text_seq("IF", "NOT", "EXISTS")
        elif verb == "DROP" or kind == "USER":
            args["exists"] = self._match_text_seq("IF", "EXISTS")
        if kind == "ROLE":
            args["role"] = self._parse_account_name("role")
        else:
            args["user"] = self._parse_user_identity()
            self._parse_password_spec(args)
            if verb == "CREATE" and self._match_text_seq("DEFAULT", "ROLE"):
                args["role"] = self._parse_account_name("role")
        while self._curr is not None and verb != "DROP":
            if self._match(TokenType.COMMENT):
                if not self._match(TokenType.STRING):
                    self.raise_error("Expected a quoted comment")
                args["comment"] = self._prev.text
            elif self._match_text_seq("ACCOUNT_UNLOCK"):
                continue
            elif self._match_texts(("PASSWORD_HISTORY", "PASSWORD_EXPIRE", "FAILED_LOGIN_ATTEMPTS",
                                    "PASSWORD_LOCK_TIME", "PASSWORD_REUSE")):  # fmt: skip
                self.raise_error(f"Galene does not support password policies ({self._prev.text})")
            else:
                break
        return self.expression(nodes.AccountStatement(**args))

    def _parse_set_password(self) -> exp.Expr:
        user = self._parse_user_identity() if self._match_text_seq("FOR") else None
        if not self._match(TokenType.EQ):
            self.raise_error("Expected '=' in SET PASSWORD")
        args: dict = {"this": "SET PASSWORD", "user": user}
        if self._match_text_seq("PASSWORD"):
            if not (self._match(TokenType.L_PAREN) and self._match(TokenType.STRING)):
                self.raise_error("Expected PASSWORD('password')")
            args["password"] = self._prev.text
            if not self._match(TokenType.R_PAREN):
                self.raise_error("Expected ')' after PASSWORD('password'")
        elif self._match(TokenType.STRING):
            args["hashed"] = self._prev.text
        else:
            self.raise_error("Expected PASSWORD('password') or the quoted password hash")
        return self.expression(nodes.AccountStatement(**args))

    def _parse_privilege_level(self) -> list[str]:
        parts: list[str] = []
        while True:
            if self._match(TokenType.STAR):
                parts.append("*")
            else:
                part = self._parse_id_var(any_token=True)
                if part is None:
                    self.raise_error("Expected a privilege level like db.*, db.tbl or ctl.db.tbl")
                parts.append(part.name)
            if not self._match(TokenType.DOT):
                return parts

    def _parse_grant(self, verb: str) -> exp.Expr:
        args: dict = {"this": verb}
        if self._curr is not None and self._curr.token_type == TokenType.STRING:
            roles = []
            while self._match(TokenType.STRING):
                roles.append(self._prev.text)
                if not self._match(TokenType.COMMA):
                    break
            args["roles"] = roles
        else:
            privileges = []
            while self._curr is not None and self._curr.text.upper() != "ON":
                self._advance()
                privileges.append(self._prev.text)
                if self._match(TokenType.L_PAREN, advance=False):
                    self.raise_error("Galene does not support column privileges")
                if not self._match(TokenType.COMMA):
                    break
            if not privileges or not self._match_text_seq("ON"):
                self.raise_error(f"Expected {verb} privilege[, …] ON … or {verb} 'role'[, …]")
            args["privileges"] = privileges
            if self._match_text_seq("RESOURCE"):
                args["on"], args["target"] = "RESOURCE", self._parse_account_name("resource")
            elif self._match_text_seq("WORKLOAD", "GROUP"):
                args["on"], args["target"] = "WORKLOAD GROUP", self._parse_account_name("workload group")
            else:
                args["on"], args["target"] = "TABLE", self._parse_privilege_level()
        if not self._match_text_seq("TO" if verb == "GRANT" else "FROM"):
            self.raise_error(f"Expected {'TO' if verb == 'GRANT' else 'FROM'} after the privilege level")
        if "roles" not in args and self._match_text_seq("ROLE"):
            args["role"] = self._parse_account_name("role")
        else:
            args["user"] = self._parse_user_identity()
        return self.expression(nodes.AccountStatement(**args))


ACCOUNT_TRANSFORMS: dict = {
    nodes.UserIdentity: lambda self, e: self._user_identity_sql(e),
    nodes.AccountStatement: lambda self, e: self._account_statement_sql(e),
}


class AccountGenerator:
    """Generator rules of the user and role statements (mixed into `Galene.Generator`)."""

    def _user_identity_sql(self, e: nodes.UserIdentity) -> str:
        host = e.args.get("host")
        return _quote(e.name) + (f"@{_quote(host)}" if host is not None else "")

    def _account_statement_sql(self, e: nodes.AccountStatement) -> str:
        """Doris SQL of a user/role statement (a clear password prints as '***')."""
        what, a = e.name, e.args
        parts = [what]
        if a.get("exists"):
            parts.append("IF NOT EXISTS" if what.startswith("CREATE") else "IF EXISTS")
        if what in ("GRANT", "REVOKE"):
            if a.get("roles"):
                parts.append(", ".join(_quote(r) for r in a["roles"]))
            else:
                parts.append(", ".join(a.get("privileges") or []))
                target = a.get("target")
                if a.get("on") == "TABLE":
                    parts.append("ON " + ".".join(target))
                else:
                    parts.append(f"ON {a.get('on')} {_quote(target)}")
            parts.append("TO" if what == "GRANT" else "FROM")
            parts.append(f"ROLE {_quote(a['role'])}" if a.get("role") else self.sql(e, "user"))
            return " ".join(parts)
        if what == "SHOW GRANTS":
            parts = ["SHOW ALL GRANTS" if a.get("all") else "SHOW GRANTS"]
            if a.get("user") is not None:
                parts.append(f"FOR {self.sql(e, 'user')}")
            return " ".join(parts)
        if what == "SET PASSWORD":
            if a.get("user") is not None:
                parts.append(f"FOR {self.sql(e, 'user')}")
            value = "PASSWORD('***')" if a.get("password") is not None else _quote(a.get("hashed") or "")
            return " ".join([*parts, "=", value])
        if what.endswith("ROLE"):
            parts.append(_quote(a["role"]))
        else:
            parts.append(self.sql(e, "user"))
        if a.get("password") is not None:
            parts.append("IDENTIFIED BY '***'")
        elif a.get("hashed") is not None:
            parts.append(f"IDENTIFIED BY PASSWORD {_quote(a['hashed'])}")
        if what == "CREATE USER" and a.get("role"):
            parts.append(f"DEFAULT ROLE {_quote(a['role'])}")
        if a.get("comment") is not None:
            parts.append(f"COMMENT {_quote(a['comment'])}")
        return " ".join(parts)
