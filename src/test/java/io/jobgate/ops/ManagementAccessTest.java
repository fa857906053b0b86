package io.jobgate.ops;

import java.net.URI;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Map;

import io.jobgate.Gateway;
import io.jobgate.api.ManagementAccess;
import io.jobgate.api.ManagementAccess.Verdict;
import io.jobgate.common.Digests;
import io.jobgate.support.ApiClient;
import io.jobgate.support.GatewayTestBase;
import org.apache.camel.CamelContext;
import org.apache.camel.BeanInject;
import org.apache.camel.ServiceStatus;
import org.apache.camel.test.main.junit5.CamelMainTest;
import org.junit.jupiter.api.Test;

import static io.jobgate.support.TestTenants.ADMIN;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The management endpoints as an outsider and as an operator see them: health open (and split into
 * liveness and readiness, with the broker, the object store and each provider), metrics and Jolokia
 * only with the admin key (this gateway does not trust loopback, as behind a local reverse proxy),
 * and Jolokia limited by its policy: reads, and only route operations.
 */
@CamelMainTest(mainClass = Gateway.class, propertyPlaceholderLocations = Gateway.SETTINGS, useJmx = true)
class ManagementAccessTest extends GatewayTestBase {

    static final String KEY_SHA256 = Digests.sha256Hex(ADMIN);

    @BeanInject
    CamelContext context;

    @Override
    protected Map<String, String> settings() {
        return Map.of("jobgate.management.allow-loopback", "false");
    }

    @Test
    void healthIsOpenAndSplitIntoLivenessAndReadinessWithEveryPart() {
        ApiClient.Response ready = api.get(null, "/observe/health/ready?exposureLevel=full");
        assertThat(ready.status()).as(ready.text()).isEqualTo(200);
        assertThat(ready.text()).contains("database", "broker", "object-store", "providers");
        ApiClient.Response all = api.get(null, "/observe/health?exposureLevel=full&data=true");
        assertThat(all.status()).as(all.text()).isEqualTo(200);
        assertThat(all.text()).contains("\"fakeimg\"", "open").contains("\"bucket\"")
                .as("a provider whose route does not run, and one left out for a class, say so")
                .contains("not running").contains("left out for");
        ApiClient.Response live = api.get(null, "/observe/health/live?exposureLevel=full");
        assertThat(live.status()).as(live.text()).isEqualTo(200);
        assertThat(live.text()).as("a dependency down is not a reason to restart this process")
                .contains("context").doesNotContain("database", "object-store");
    }

    @Test
    void metricsAndJolokiaNeedTheAdminKey() {
        for (String path : new String[] {"/observe/metrics", "/observe/jolokia/version", "/observe/info"}) {
            ApiClient.Response outsider = api.get(null, path);
            assertThat(outsider.status()).as(path).isEqualTo(401);
            assertThat(outsider.contentType()).startsWith("application/problem+json");
            assertThat(outsider.code()).isEqualTo("unauthorized");
            assertThat(api.get("not-the-key", path).status()).as(path).isEqualTo(401);
            assertThat(api.get(ADMIN, path).status()).as(path).isEqualTo(200);
        }
        // HTTP Basic with the key as password: what Hawtio's connection and Prometheus can send.
        String basic = "Basic " + Base64.getEncoder().encodeToString(("operator:" + ADMIN).getBytes(StandardCharsets.UTF_8));
        assertThat(api.send(api.request("/observe/metrics", null).header("Authorization", basic).GET().build()).status())
                .isEqualTo(200);
    }

    @Test
    void jolokiaReadsEverythingAndRunsOnlyRouteOperations() throws Exception {
        ApiClient.Response read = jolokia("""
                {"type": "read", "mbean": "org.apache.camel:context=jobgate,type=context,name=\\"jobgate\\"", "attribute": "State"}""");
        assertThat(read.json().path("status").asInt()).as(read.text()).isEqualTo(200);
        assertThat(read.json().path("value").asText()).isEqualTo("Started");

        String tracingOn = """
                {"type": "write", "mbean": "org.apache.camel:context=jobgate,type=context,name=\\"jobgate\\"",
                 "attribute": "Tracing", "value": true}""";
        // An outsider's write (no key, a wrong key) is refused before Jolokia sees it.
        for (String key : new String[] {null, "not-the-key"}) {
            HttpRequest.Builder outsider = HttpRequest.newBuilder(URI.create(api.base() + "/observe/jolokia/"))
                    .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(tracingOn));
            if (key != null) {
                outsider.header("Authorization", "Bearer " + key);
            }
            ApiClient.Response refused = api.send(outsider.build());
            assertThat(refused.status()).as(refused.text()).isEqualTo(401);
        }
        ApiClient.Response write = jolokia(tracingOn);
        assertThat(write.json().path("status").asInt()).as(write.text()).isEqualTo(403);
        assertThat(context.isTracing()).isFalse();
        ApiClient.Response gc = jolokia("""
                {"type": "exec", "mbean": "java.lang:type=Memory", "operation": "gc"}""");
        assertThat(gc.json().path("status").asInt()).as(gc.text()).isEqualTo(403);
        ApiClient.Response stopContext = jolokia("""
                {"type": "exec", "mbean": "org.apache.camel:context=jobgate,type=context,name=\\"jobgate\\"", "operation": "stop"}""");
        assertThat(stopContext.json().path("status").asInt()).as(stopContext.text()).isEqualTo(403);
        assertThat(context.getStatus()).isEqualTo(ServiceStatus.Started);

        // The read-only dumps Hawtio draws diagrams from; not the form that resolves placeholders (secrets).
        String camelContext = "org.apache.camel:context=jobgate,type=context,name=\\\"jobgate\\\"";
        ApiClient.Response dump = jolokia("{\"type\": \"exec\", \"mbean\": \"" + camelContext + "\", \"operation\": \"dumpRoutesAsXml()\"}");
        assertThat(dump.json().path("status").asInt()).as(dump.text()).isEqualTo(200);
        assertThat(dump.json().path("value").asText()).contains("create-job");
        ApiClient.Response stats = jolokia("{\"type\": \"exec\", \"mbean\": \"" + camelContext
                + "\", \"operation\": \"dumpRoutesStatsAsXml\", \"arguments\": [true, true]}");
        assertThat(stats.json().path("status").asInt()).as(stats.text()).isEqualTo(200);
        ApiClient.Response resolved = jolokia("{\"type\": \"exec\", \"mbean\": \"" + camelContext
                + "\", \"operation\": \"dumpRoutesAsXml(boolean)\", \"arguments\": [true]}");
        assertThat(resolved.json().path("status").asInt()).as(resolved.text()).isEqualTo(403);

        // An operator may suspend and resume a route.
        String route = "org.apache.camel:context=jobgate,type=routes,name=\\\"metrics-gauges\\\"";
        ApiClient.Response suspend = jolokia("{\"type\": \"exec\", \"mbean\": \"" + route + "\", \"operation\": \"suspend()\"}");
        assertThat(suspend.json().path("status").asInt()).as(suspend.text()).isEqualTo(200);
        assertThat(context.getRouteController().getRouteStatus("metrics-gauges")).isEqualTo(ServiceStatus.Suspended);
        ApiClient.Response resume = jolokia("{\"type\": \"exec\", \"mbean\": \"" + route + "\", \"operation\": \"resume()\"}");
        assertThat(resume.json().path("status").asInt()).as(resume.text()).isEqualTo(200);
        assertThat(context.getRouteController().getRouteStatus("metrics-gauges")).isEqualTo(ServiceStatus.Started);
    }

    @Test
    void theRuleApartFromTheServer() {
        String bearer = "Bearer " + ADMIN;
        assertThat(ManagementAccess.decide("/observe/health", false, null, KEY_SHA256, true)).isEqualTo(Verdict.OPEN);
        assertThat(ManagementAccess.decide("/observe/health/ready", false, null, KEY_SHA256, false)).isEqualTo(Verdict.OPEN);
        assertThat(ManagementAccess.decide("/observe/healthx", false, null, KEY_SHA256, true)).isEqualTo(Verdict.REFUSED);
        assertThat(ManagementAccess.decide("/observe/metrics", true, null, KEY_SHA256, true)).isEqualTo(Verdict.ALLOWED);
        assertThat(ManagementAccess.decide("/observe/metrics", true, null, KEY_SHA256, false)).isEqualTo(Verdict.REFUSED);
        assertThat(ManagementAccess.decide("/observe/metrics", false, null, KEY_SHA256, true)).as("an outside request").isEqualTo(Verdict.REFUSED);
        assertThat(ManagementAccess.decide("/observe/jolokia/exec", false, bearer, KEY_SHA256, true)).isEqualTo(Verdict.ALLOWED);
        assertThat(ManagementAccess.decide("/observe/jolokia", false, "Bearer nope", KEY_SHA256, true)).isEqualTo(Verdict.REFUSED);
        assertThat(ManagementAccess.decide("/observe/jolokia", false, bearer, null, true)).as("no admin key configured").isEqualTo(Verdict.REFUSED);
        assertThat(ManagementAccess.decide("/observe/jolokia", false, "Basic !!!", KEY_SHA256, true)).isEqualTo(Verdict.REFUSED);
    }

    private ApiClient.Response jolokia(String body) {
        return api.send(HttpRequest.newBuilder(URI.create(api.base() + "/observe/jolokia/"))
                .header("Authorization", "Bearer " + ADMIN).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build());
    }
}
