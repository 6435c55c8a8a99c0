"""Statements on users and privileges, with Doris' rules and texts (`galene.fe.auth` owns the
model): CREATE / ALTER / DROP USER, SET PASSWORD, CREATE / ALTER / DROP ROLE, GRANT / REVOKE
(privileges and roles), SHOW GRANTS, SHOW ROLES. Passwords are hashed here and never stored or
logged in the clear. `UserStatements` is a part of `galene.fe.executor.SqlExecutor`."""

from __future__ import annotations

import functools

from galene.catalog.model import UserAccount, account_key
from galene.common.errors import AnalysisError
from galene.fe import auth, grants
from galene.fe.executor_base import ExecutorBase, cols
from galene.fe.mysql.boundary import StatementResult
from galene.sql.statements.account import Revoke, RevokeRole


class UserStatements(ExecutorBase):
    # --- users and privileges (rules: galene/fe/auth.py) ---------------------------------------
    def _need_global(self, ctx, pred, what: str) -> None:
        if not auth.has_global(self.fe.state, auth.session_identity(ctx), pred):
            raise auth.specific_denied(what)

    @staticmethod
    def _password_hash(s) -> str | None:
        if s.password is not None:
            return auth.native_hash(s.password)
        if s.hashed is not None:
            return auth.parse_hashed_password(s.hashed)
        return None

    @staticmethod
    def _check_user_name(name: str) -> None:
        if not name:
            raise AnalysisError("Does not support anonymous user")

    async def _do_CreateUser(self, s, ctx):
        self._check_user_name(s.user)
        if s.user == "root":
            raise AnalysisError("Can not create root user")
        password = self._password_hash(s)
        role = s.role
        if role is not None:
            if role.upper() == "SUPERUSER":  # Doris' old name for admin
                role = "admin"
            if role == "operator":
                raise AnalysisError(f"Can not granted user to role: {role}")
        self._need_global(ctx, auth.GRANT, "GRANT")
        account = UserAccount(
            name=s.user, host=s.host, password=password or "", comment=s.comment or "", roles=[role] if role else []
        )
        await self.blocking(self.fe.catalog.create_user, account, s.if_not_exists)
        return StatementResult()

    def _check_root_password_change(self, ctx, name: str) -> None:
        if name == "root" and ctx.user != "root":
            raise AnalysisError("Can not set password for root user, except root itself")

    async def _do_AlterUser(self, s, ctx):
        self._check_user_name(s.user)
        password = self._password_hash(s)
        if password is not None:
            self._check_root_password_change(ctx, s.user)
        self._need_global(ctx, auth.GRANT, "GRANT")
        await self.blocking(
            functools.partial(
                self.fe.catalog.alter_user, s.user, s.host, password_sha1=password, comment=s.comment,
                if_exists=s.if_exists,
            )
        )  # fmt: skip
        return StatementResult()

    async def _do_DropUser(self, s, ctx):
        self._check_user_name(s.user)
        if s.user in ("root", "admin"):
            raise AnalysisError("Can not drop system user")
        self._need_global(ctx, auth.GRANT, "DROP USER")
        await self.blocking(self.fe.catalog.drop_user, s.user, s.host, s.if_exists)
        return StatementResult()

    async def _do_SetPassword(self, s, ctx):
        me = auth.session_identity(ctx)
        target = me if s.user is None else auth.Identity(s.user, s.host)
        password = self._password_hash(s) or ""
        self._check_root_password_change(ctx, target.name)
        if target != me:
            self._need_global(ctx, auth.GRANT, "GRANT")
        await self.blocking(self.fe.catalog.set_password, target.name, target.host, password)
        return StatementResult()

    @staticmethod
    def _check_role_name(role: str, what: str, can_be_admin: bool = False) -> None:
        if role == "operator" or (not can_be_admin and role == "admin"):
            raise AnalysisError(f"{what}: {role}")

    async def _do_CreateRole(self, s, ctx):
        self._check_role_name(s.name, "Can not create role")
        self._need_global(ctx, auth.GRANT, "GRANT")
        await self.blocking(self.fe.catalog.create_role, s.name, s.comment, s.if_not_exists)
        return StatementResult()

    async def _do_DropRole(self, s, ctx):
        self._check_role_name(s.name, "Can not drop role")
        self._need_global(ctx, auth.GRANT, "GRANT")
        await self.blocking(self.fe.catalog.drop_role, s.name, s.if_exists)
        return StatementResult()

    async def _do_AlterRole(self, s, ctx):
        self._check_role_name(s.name, "Can not alter role")
        self._need_global(ctx, auth.GRANT, "GRANT")
        await self.blocking(self.fe.catalog.alter_role, s.name, s.comment)
        return StatementResult()

    async def _do_Grant(self, s, ctx):
        state = self.fe.state
        revoke = isinstance(s, Revoke)
        privileges = grants.parse_privileges(s.privileges)
        if not privileges:
            raise AnalysisError("No privileges or roles in grant statement.")
        kind = {"TABLE": "TABLE", "RESOURCE": "RESOURCE"}.get(s.on, "WORKLOAD_GROUP")
        if kind == "TABLE":
            target = grants.table_pattern(list(s.target))
            if grants.pattern_level(target) == "TABLE":
                ctl, db, tbl = target.split(".", 2)
                target = f"{ctl}.{db}.{auth.canonical_table(state, db, tbl)}"
        else:
            target = s.target
        if s.role is not None:
            self._check_role_name(s.role, "Can not revoke from role" if revoke else "Can not grant to role")
        else:
            self._check_user_name(s.user)
        grants.check_grant_rules(state, auth.session_identity(ctx), kind, target, privileges)
        user = account_key(s.user, s.host) if s.role is None else None
        change = self.fe.catalog.revoke_privileges if revoke else self.fe.catalog.grant_privileges
        await self.blocking(change, user, s.role, kind, target, privileges)
        return StatementResult()

    _do_Revoke = _do_Grant

    async def _do_GrantRole(self, s, ctx):
        for role in s.roles:
            self._check_role_name(role, "Can not grant role", can_be_admin=True)
        self._need_global(ctx, auth.GRANT, "GRANT")
        change = self.fe.catalog.revoke_roles if isinstance(s, RevokeRole) else self.fe.catalog.grant_roles
        await self.blocking(change, account_key(s.user, s.host), list(s.roles))
        return StatementResult()

    _do_RevokeRole = _do_GrantRole

    async def _do_ShowGrants(self, s, ctx):
        state = self.fe.state
        me = auth.session_identity(ctx)
        target = None if s.all else (auth.Identity(s.user, s.host) if s.user is not None else me)
        if target != me:
            self._need_global(ctx, auth.GRANT, "GRANT")
        if target is not None and target != me and target.key not in state.accounts:
            raise AnalysisError(f"User: {target} does not exist")
        accounts = list(state.accounts.values()) if target is None else [state.accounts.get(target.key)]
        rows = sorted((grants.grants_row(state, a) for a in accounts if a is not None), key=lambda r: r[0])
        return StatementResult(columns=cols(*grants.GRANTS_COLUMNS), rows=rows)

    async def _do_ShowRoles(self, s, ctx):
        self._need_global(ctx, auth.GRANT, "GRANT")
        state = self.fe.state
        rows = [grants.roles_row(state, state.roles[name]) for name in sorted(state.roles)]
        return StatementResult(columns=cols(*grants.ROLES_COLUMNS), rows=rows)
