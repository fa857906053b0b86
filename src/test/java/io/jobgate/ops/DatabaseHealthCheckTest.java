package io.jobgate.ops;

import java.time.Duration;

import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.TestDatabase;
import org.apache.camel.health.HealthCheck;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

class DatabaseHealthCheckTest {

    @Test
    void upWhenPostgresAnswersDownWhenItDoesNot() throws Exception {
        PGSimpleDataSource live = new PGSimpleDataSource();
        live.setURL(TestDatabase.url());
        live.setUser(TestDatabase.user());
        live.setPassword(TestDatabase.password());
        PGSimpleDataSource gone = new PGSimpleDataSource();
        gone.setURL("jdbc:postgresql://127.0.0.1:" + GatewayTestSupport.freePort() + "/postgres");

        DatabaseHealthCheck up = new DatabaseHealthCheck(live);
        up.startProbing();
        await().atMost(Duration.ofSeconds(10)).until(() -> up.call().getState() == HealthCheck.State.UP);
        DatabaseHealthCheck down = new DatabaseHealthCheck(gone);
        down.startProbing();
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
            HealthCheck.Result result = down.call();
            assertThat(result.getState()).isEqualTo(HealthCheck.State.DOWN);
            assertThat(result.getMessage()).hasValueSatisfying(m -> assertThat(m).contains("PostgreSQL does not answer"));
        });
    }

    /**
     * /observe/health is answered on the HTTP server's event loop: a probe that waits for a server that
     * does not answer (here a connection to an address that drops the packets) must not make the check
     * wait. It answers from what it knows, and DOWN once the probe has taken too long. Each answer says
     * itself that it came while the probe still hung: the probe ends only with the driver's 60 s login
     * timeout, and a check that waited for it would answer with the probe's own failure.
     */
    @Test
    void aProbeThatHangsNeverHoldsTheCaller() throws Exception {
        // A server that takes the connection and never answers (a PostgreSQL host gone into swap, a
        // half-open connection through a firewall): the driver waits for its login timeout.
        try (java.net.ServerSocket silent = new java.net.ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress())) {
            PGSimpleDataSource hanging = new PGSimpleDataSource();
            hanging.setURL("jdbc:postgresql://127.0.0.1:" + silent.getLocalPort() + "/postgres?sslmode=disable");
            hanging.setLoginTimeout(60);
            probeOf(hanging);
        }
    }

    private static void probeOf(PGSimpleDataSource hanging) {
        DatabaseHealthCheck check = new DatabaseHealthCheck(hanging);
        check.startProbing();
        // The first requests after a start wait for the first probe, at most FIRST_WAIT: this one answered
        // without it, while it had not finished.
        HealthCheck.Result first = check.call();
        assertThat(first.getState()).isEqualTo(HealthCheck.State.DOWN);
        assertThat(first.getMessage()).hasValue("first probe not finished");
        // Later ones answer from what they know; once the probe has run for STUCK, that it does not answer.
        await().atMost(BackgroundHealthCheck.STUCK.plusSeconds(10)).untilAsserted(() -> {
            HealthCheck.Result later = check.call();
            assertThat(later.getState()).isEqualTo(HealthCheck.State.DOWN);
            assertThat(later.getMessage()).hasValueSatisfying(m -> assertThat(m).startsWith("no answer for"));
        });
    }
}
