"""The FE's MySQL-protocol endpoint (port 9030), built on mysql-mimic.

The package owns the wire between a MySQL client and the FE's statement dispatcher
(`galene.fe.executor`), one concept a module:

* `boundary` — what the endpoint and the executor exchange: `Executor` (the protocol the
  dispatcher implements: statements, logins, privilege checks), `SessionContext`,
  `StatementResult`, `ResultColumn`.
* `errors` — the MySQL error numbers the endpoint answers with, their SQLSTATEs, the error
  packet, malformed command packets (1835).
* `framing` — packets on the socket (`GaleneStream`), every read and write bounded in size and
  time; the limits a session's variables may set.
* `result_encoding` — column definitions and row values (text and binary protocol) of a result.
* `nested_text` — Doris' text forms of ARRAY / MAP / STRUCT values, rendered over the type tree.
* `results` — a statement's answer on the wire: OK packet, result header, rows (streamed).
* `prepared` — prepared statements (COM_STMT_*): parameters decoded and substituted as SQL
  literals, cursors.
* `session` — one client session: its variables, current database, statement routing
  (session-level statements answered by `session_sql` over `variables`, the rest by the
  executor).
* `connection` — login (mysql_native_password against the executor's stored hashes, 1045/1049
  as Doris sends them), the command loop, COM_QUERY / COM_INIT_DB / COM_FIELD_LIST.
* `server` — the listener: connection ids, connection limits, KILL, the process list.

mysql-mimic is used for its handshake, auth plugin and packet helpers; the parts of its
Connection that are wrong for us are overridden: OK packets without affected rows/info,
unescaped prepared-statement parameters, a COM_FIELD_LIST answer packed into one packet, failed
logins that fall through into the command phase, result labels of its sqlglot-based static
query evaluation, and its stream framing (whose read trusts the announced length).

Bounds: every input of the port is bounded in size, count and time.

* Packets (`framing`): a command's payload (all its 16 MB-1 packets joined, the command byte
  included) may be at most the session's `max_allowed_packet` (default: config
  `max_allowed_packet`); a longer one is read on and discarded piece by piece — never held —
  and answered with MySQL's 1153 "Got a packet bigger than 'max_allowed_packet' bytes"
  (08S01), then the connection is closed, as MySQL does. Discarding (up to a limit) is what
  lets the client read the error instead of a reset. Login packets are held to a small limit.
  A wrong sequence id answers 1156 "Got packets out of order" and closes. Large result packets
  are split as the protocol requires.
* Connections (`server`, `connection`): a socket is *logging in* from accept until its login
  completes. At most `qe_max_connection` sockets may be logging in at once; a socket beyond
  that is answered at once, before the greeting, with Doris' 1203 "Too many connections" and
  closed (Doris' answer when its connection workers are exhausted). Each has `connect_timeout`
  seconds to finish its login, then it is closed. Logged-in sessions are bounded as Doris'
  AcceptListener bounds them: after authentication, past `qe_max_connection` sessions in all
  or `max_user_connections` for the user, the login is answered with 1203 "Reach limit of
  connections. Total: <qe_max_connection>, User: <user limit>, Current: <sessions>" and
  closed. So the port holds at most 2 x `qe_max_connection` sockets, each with bounded buffers.
* Time: between commands a session waits at most its `wait_timeout` (session variable,
  default from config `wait_timeout`), then gets MySQL 8's 4031 "The client was disconnected
  by the server because of inactivity..." and is closed. Inside a packet each read waits at
  most `net_read_timeout` (1159 "Got timeout reading communication packets"), and each write
  at most `net_write_timeout`. All are timers, not clock checks on the next packet.
* Statements (`session`): bracket nesting deeper than `max_sql_nesting_depth` is refused (1105)
  by a non-recursive scan before sqlglot sees the text; nesting the scan does not count (NOT
  NOT ...) ends in the parser's RecursionError, which is answered the same way. Invalid UTF-8
  answers 1300 and malformed command packets 1835; neither ends the session.
"""
