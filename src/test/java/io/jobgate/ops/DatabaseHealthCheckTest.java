package io.jobgate.ops;

import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.TestDatabase;
import org.apache.camel.health.HealthCheck;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

import static org.assertj.core.api.Assertions.assertThat;

class DatabaseHealthCheckTest {

    @Test
    void upWhenPostgresAnswersDownWhenItDoesNot() throws Exception {
        PGSimpleDataSource live = new PGSimpleDataSource();
        live.setURL(TestDatabase.url());
        live.setUser(TestDatabase.user());
        live.setPassword(TestDatabase.password());
        PGSimpleDataSource gone = new PGSimpleDataSource();
        gone.setURL("jdbc:postgresql://127.0.0.1:" + GatewayTestSupport.freePort() + "/postgres");

        assertThat(new DatabaseHealthCheck(live).call().getState()).isEqualTo(HealthCheck.State.UP);
        HealthCheck.Result down = new DatabaseHealthCheck(gone).call();
        assertThat(down.getState()).isEqualTo(HealthCheck.State.DOWN);
        assertThat(down.getMessage()).hasValueSatisfying(m -> assertThat(m).contains("PostgreSQL does not answer"));
    }
}
