package io.jobgate.support;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Collections;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The plan PostgreSQL gives a statement prepared once and run with its parameters unknown, as a pool does. */
public final class GenericPlans {

    private static final Pattern PARAMETER = Pattern.compile("\\$(\\d+)");

    private GenericPlans() {
    }

    /** EXPLAIN's text of {@code query}, whose parameters are written {@code $1 … $n}. */
    public static String of(Statement s, String query) throws SQLException {
        int parameters = 0;
        Matcher m = PARAMETER.matcher(query);
        while (m.find()) {
            parameters = Math.max(parameters, Integer.parseInt(m.group(1)));
        }
        s.execute("DEALLOCATE ALL");
        s.execute("PREPARE generic_plan AS " + query);
        StringBuilder plan = new StringBuilder();
        String args = parameters == 0 ? "" : "(" + String.join(", ", Collections.nCopies(parameters, "NULL")) + ")";
        try (ResultSet rs = s.executeQuery("EXPLAIN EXECUTE generic_plan" + args)) {
            while (rs.next()) {
                plan.append(rs.getString(1)).append('\n');
            }
        }
        return plan.toString();
    }

    /** The same for a JDBC statement, whose parameters are written {@code ?}. */
    public static String ofJdbc(Statement s, String query) throws SQLException {
        return of(s, numbered(query));
    }

    /** A JDBC statement's {@code ?} parameters written {@code $1 … $n}. */
    public static String numbered(String query) {
        String numbered = query;
        for (int i = 1; numbered.contains("?"); i++) {
            numbered = numbered.replaceFirst("\\?", "\\$" + i);
        }
        return numbered;
    }
}
