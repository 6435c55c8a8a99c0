import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * What a BI tool (Metabase, DBeaver...) does through MariaDB Connector/J, unchanged: connect with
 * the URL's options, browse DatabaseMetaData, run prepared statements, fetch a large result.
 *
 * Usage: java -cp mariadb-java-client.jar:. JdbcFlow <jdbc url> <database>
 *
 * Each step prints one line "STEP\t<name>\tOK" or "STEP\t<name>\tFAIL\t<errno>\t<message>",
 * preceded by its result rows as "ROW\t<name>\t<col1>\t<col2>..." (NULL printed as \N); the test
 * (tests/e2e/test_jdbc.py) reads them. A failed step does not stop the later ones.
 */
public class JdbcFlow {
    interface Step {
        void run(Connection c, String name) throws SQLException;
    }

    static String db;

    public static void main(String[] args) throws Exception {
        String url = args[0];
        db = args[1];
        Connection c;
        try {
            c = DriverManager.getConnection(url);
        } catch (SQLException e) {
            fail("connect", e);
            return;
        }
        System.out.println("STEP\tconnect\tOK");
        try {
            DatabaseMetaData md = c.getMetaData();
            step(c, "product", (cn, n) -> row(n, md.getDatabaseProductName(), md.getDatabaseProductVersion(),
                    Integer.toString(md.getDatabaseMajorVersion()), Integer.toString(md.getDatabaseMinorVersion())));
            step(c, "catalogs", (cn, n) -> rows(n, md.getCatalogs(), "TABLE_CAT"));
            step(c, "schemas", (cn, n) -> rows(n, md.getSchemas(), "TABLE_SCHEM", "TABLE_CATALOG"));
            step(c, "tables", (cn, n) -> rows(n, md.getTables(db, null, "%", null), "TABLE_NAME", "TABLE_TYPE"));
            step(c, "columns", (cn, n) -> rows(n, md.getColumns(db, null, "prices", "%"), "COLUMN_NAME",
                    "TYPE_NAME", "DATA_TYPE", "COLUMN_SIZE", "DECIMAL_DIGITS", "NULLABLE", "ORDINAL_POSITION"));
            step(c, "primary_keys", (cn, n) -> rows(n, md.getPrimaryKeys(db, null, "prices"), "COLUMN_NAME", "KEY_SEQ"));
            step(c, "index_info", (cn, n) -> rows(n, md.getIndexInfo(db, null, "prices", false, false), "INDEX_NAME",
                    "COLUMN_NAME"));
            step(c, "prepared_select", (cn, n) -> {
                try (PreparedStatement ps = cn.prepareStatement(
                        "SELECT k, name, price FROM prices WHERE k >= ? AND name <> ? ORDER BY k")) {
                    ps.setInt(1, 2);
                    ps.setString(2, "one");
                    rows(n, ps.executeQuery(), "k", "name", "price");
                    ps.setInt(1, 3);  // the same statement again, other parameters
                    ps.setString(2, "x");
                    rows(n + "_again", ps.executeQuery(), "k", "name", "price");
                }
                try (PreparedStatement ps = cn.prepareStatement("SELECT k FROM prices WHERE name = ?")) {
                    ps.setString(1, "nobody's");  // a quote in a parameter
                    rows(n + "_quote", ps.executeQuery(), "k");
                }
            });
            step(c, "prepared_insert", (cn, n) -> {
                try (PreparedStatement ps = cn.prepareStatement("INSERT INTO prices VALUES (?, ?, ?)")) {
                    ps.setInt(1, 10);
                    ps.setString(2, "ten's \"quoted\" \u00e9t\u00e9");
                    ps.setBigDecimal(3, new BigDecimal("10.05"));
                    ps.addBatch();
                    ps.setInt(1, 11);
                    ps.setNull(2, java.sql.Types.VARCHAR);
                    ps.setNull(3, java.sql.Types.DECIMAL);
                    ps.addBatch();
                    ps.executeBatch();
                }
                try (Statement st = cn.createStatement()) {
                    rows(n, st.executeQuery("SELECT k, name, price FROM prices WHERE k >= 10 ORDER BY k"),
                            "k", "name", "price");
                }
            });
            step(c, "big_fetch", (cn, n) -> {
                try (Statement st = cn.createStatement();
                     ResultSet rs = st.executeQuery("SELECT id, label FROM big")) {
                    long count = 0;
                    long sum = 0;
                    long labelChars = 0;
                    while (rs.next()) {
                        count++;
                        sum += rs.getLong(1);
                        labelChars += rs.getString(2).length();
                    }
                    row(n, Long.toString(count), Long.toString(sum), Long.toString(labelChars));
                }
            });
        } finally {
            c.close();
        }
    }

    static void step(Connection c, String name, Step s) {
        try {
            s.run(c, name);
            System.out.println("STEP\t" + name + "\tOK");
        } catch (SQLException e) {
            fail(name, e);
        } catch (RuntimeException e) {
            System.out.println("STEP\t" + name + "\tFAIL\t-1\t" + oneLine(e.toString()));
        }
    }

    static void fail(String name, SQLException e) {
        System.out.println("STEP\t" + name + "\tFAIL\t" + e.getErrorCode() + "\t" + oneLine(String.valueOf(e.getMessage())));
    }

    static String oneLine(String s) {
        return s.replace('\n', ' ').replace('\t', ' ');
    }

    static void row(String name, String... values) {
        StringBuilder sb = new StringBuilder("ROW\t").append(name);
        for (String v : values) {
            sb.append('\t').append(v == null ? "\\N" : oneLine(v));
        }
        System.out.println(sb);
    }

    static void rows(String name, ResultSet rs, String... columns) throws SQLException {
        try (ResultSet r = rs) {
            ResultSetMetaData meta = r.getMetaData();
            while (r.next()) {
                String[] values = new String[columns.length];
                for (int i = 0; i < columns.length; i++) {
                    // By label, as tools read these result sets (a missing label throws here).
                    values[i] = r.getString(columns[i]);
                }
                row(name, values);
            }
            if (meta.getColumnCount() == 0) {
                throw new SQLException("result set without columns");
            }
        }
    }
}
