package io.jobgate.relay;

import java.util.Map;

import org.junit.jupiter.api.Assumptions;

/**
 * The broker contract on a standalone Artemis (CI starts apache-artemis 2.40.0 with our
 * broker.xml): {@code JOBGATE_TEST_BROKER_URL}, {@code _USER}, {@code _PASSWORD}. With
 * {@code JOBGATE_TEST_REQUIRE_STANDALONE_BROKER=true} a missing broker fails instead of skipping.
 */
class StandaloneBrokerFlowsTest extends BrokerFlowsContract {

    static final String URL = System.getenv("JOBGATE_TEST_BROKER_URL");

    static {
        // Decided before the gateway boots: without a broker there is nothing to boot against.
        if ((URL == null || URL.isBlank())
                && Boolean.parseBoolean(System.getenv("JOBGATE_TEST_REQUIRE_STANDALONE_BROKER"))) {
            throw new IllegalStateException("JOBGATE_TEST_REQUIRE_STANDALONE_BROKER is set but JOBGATE_TEST_BROKER_URL is not");
        }
    }

    @Override
    protected Map<String, String> settings() throws Exception {
        Assumptions.assumeTrue(URL != null && !URL.isBlank(), "no standalone broker: JOBGATE_TEST_BROKER_URL is not set");
        return Map.of("jobgate.broker.url", URL,
                "jobgate.broker.user", env("JOBGATE_TEST_BROKER_USER"),
                "jobgate.broker.password", env("JOBGATE_TEST_BROKER_PASSWORD"));
    }

    @Override
    String producerHostPort() {
        java.net.URI uri = java.net.URI.create(URL);
        return uri.getHost() + ":" + uri.getPort();
    }

    private static String env(String name) {
        String v = System.getenv(name);
        return v == null ? "" : v;
    }
}
