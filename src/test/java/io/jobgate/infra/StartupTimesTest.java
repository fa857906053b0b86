package io.jobgate.infra;

import java.util.Properties;

import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The ready line tells a newcomer where the API is and what to try next, or that this instance serves none. */
class StartupTimesTest {

    static String whereAndNext(String port, String runsApi) throws Exception {
        // System properties an earlier test class left would win over the initial properties: set aside.
        java.util.Map<String, String> saved = new java.util.HashMap<>();
        for (String key : new String[] {"camel.server.port", "jobgate.runs.api"}) {
            String value = System.getProperty(key);
            if (value != null) {
                saved.put(key, value);
                System.clearProperty(key);
            }
        }
        try (DefaultCamelContext context = new DefaultCamelContext()) {
            Properties p = new Properties();
            p.setProperty("camel.server.port", port);
            p.setProperty("jobgate.runs.api", runsApi);
            context.getPropertiesComponent().setInitialProperties(p);
            return StartupTimes.whereAndNext(context);
        } finally {
            saved.forEach(System::setProperty);
        }
    }

    @Test
    void theReadyLineNamesTheApiAndAFirstCommand() throws Exception {
        assertThat(whereAndNext("8181", "true")).contains("API at http://localhost:8181/v1")
                .contains("http://localhost:8181/openapi.json").contains("http://localhost:8181/observe/health")
                .contains("java -jar target/jobgate.jar demo");
    }

    @Test
    void anInstanceWithoutTheApiRoleSaysSo() throws Exception {
        assertThat(whereAndNext("8080", "false")).startsWith("no API on this instance").contains("/observe/health")
                .doesNotContain("/v1");
    }
}
