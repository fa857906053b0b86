package io.jobgate.ops;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Timestamp;
import java.time.Clock;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Supplier;

import javax.sql.DataSource;

import org.apache.camel.health.HealthCheckResultBuilder;

/**
 * Each provider's state, for an operator reading health: its gate open, or closed until when and
 * why (a 429's Retry-After); whether its adapter route runs; the classes it was left out for. Always UP: a provider that asks us to wait is not a reason to take the
 * gateway out of rotation — its jobs wait in {@code retry_wait} and the rest keep flowing.
 */
public final class ProviderGatesHealthCheck extends BackgroundHealthCheck {

    private final DataSource dataSource;
    private final Supplier<Map<String, String>> providers;
    private final Clock clock;

    /** {@code providers}: each provider's name and what else health says of it (its route not running, classes left out; or empty). */
    public ProviderGatesHealthCheck(DataSource dataSource, Supplier<Map<String, String>> providers, Clock clock) {
        super("jobgate", "providers");
        this.dataSource = dataSource;
        this.providers = providers;
        this.clock = clock;
    }

    @Override
    public boolean isLiveness() {
        return false;
    }

    @Override
    protected void probe(HealthCheckResultBuilder builder) {
        Map<String, String> read;
        try {
            read = providers.get();
        } catch (RuntimeException e) {
            // The notes read the database (canaries): unreadable, the check still answers; the database's own
            // check says the database is down (a throw here would make the whole health answer 500, not 503).
            read = Map.of();
            builder.message("provider notes unreadable: " + e.getMessage());
        }
        Map<String, String> notes = read;
        Map<String, Object> states = new TreeMap<>();
        notes.keySet().forEach(p -> states.put(p, "open"));
        try (Connection c = dataSource.getConnection(); PreparedStatement s = c.prepareStatement(
                "SELECT provider, closed_until, closed_reason FROM provider_gates WHERE closed_until > ?")) {
            s.setTimestamp(1, Timestamp.from(clock.instant()));
            try (ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    states.put(rs.getString(1), "closed until " + rs.getTimestamp(2).toInstant() + " (" + rs.getString(3) + ")");
                }
            }
        } catch (Exception e) {
            builder.message("provider gates unreadable: " + e.getMessage());
        }
        states.forEach((provider, gate) -> {
            String note = notes.getOrDefault(provider, "");
            builder.detail(provider, note.isEmpty() ? gate : gate + "; " + note);
        });
        builder.up();
    }
}
