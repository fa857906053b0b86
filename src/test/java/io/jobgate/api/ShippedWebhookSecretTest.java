package io.jobgate.api;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.Collections;
import java.util.Map;
import java.util.UUID;

import io.jobgate.common.Digests;
import io.jobgate.common.WebhookSignature;
import io.jobgate.support.ApiClient;
import io.jobgate.support.GatewayTestBase;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Issue 64: the bundled simulator's shipped webhook secret is a demo credential. On a gateway that listens on
 * every interface (tenants and an admin key of its own, so the demo-key refusal lets it start; the simulator
 * off, so the start check lets it start too, while the provider {@code simulator} still verifies with the
 * shipped secret), a webhook for that provider from this machine's non-loopback address is refused, from
 * loopback it is heard, and a provider with a secret of its own is heard from anywhere.
 */
class ShippedWebhookSecretTest extends GatewayTestBase {

    /** config/application.properties, jobgate.simulator.webhook-secret, as shipped. */
    static final String SHIPPED = "whsec_c2ltdWxhdG9yLWRldmVsb3BtZW50LXNlY3JldA==";
    /** src/test/resources/providers/fakeasync.properties: a secret of its own. */
    static final String OWN = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

    final HttpClient http = HttpClient.newHttpClient();

    @Override
    protected Map<String, String> settings() {
        return Map.of("camel.server.host", "0.0.0.0",
                "jobgate.tenants.files", "src/test/resources/test-tenants.yaml",
                "jobgate.admin.api-key-sha256", Digests.sha256Hex("an-admin-key-of-this-test"),
                "jobgate.demo", "false");
    }

    /** An IPv4 address of this machine that is not loopback: a request to it comes from it, not from 127.0.0.1. */
    static String nonLoopbackAddress() throws Exception {
        for (NetworkInterface nic : Collections.list(NetworkInterface.getNetworkInterfaces())) {
            if (!nic.isUp() || nic.isLoopback()) {
                continue;
            }
            for (InetAddress address : Collections.list(nic.getInetAddresses())) {
                if (address instanceof Inet4Address && !address.isLoopbackAddress() && !address.isLinkLocalAddress()) {
                    return address.getHostAddress();
                }
            }
        }
        return null;
    }

    ApiClient.Response webhook(String host, String provider, String secret) throws Exception {
        String id = "msg_" + UUID.randomUUID();
        String timestamp = Long.toString(java.time.Instant.now().getEpochSecond());
        // A finished task no job waits on: a heard webhook answers 200 {"matched": false}.
        String body = "{\"id\": \"t-" + UUID.randomUUID() + "\", \"status\": \"failed\", \"output\": null}";
        String signature = Base64.getEncoder().encodeToString(
                WebhookSignature.sign(secret, id, timestamp, body.getBytes(StandardCharsets.UTF_8)));
        URI uri = URI.create(api.base().replace("127.0.0.1", host) + "/v1/providers/" + provider + "/webhook");
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(30))
                .header("Content-Type", "application/json").header("webhook-id", id).header("webhook-timestamp", timestamp)
                .header("webhook-signature", "v1," + signature).POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
        return new ApiClient.Response(r.statusCode(), r.headers(), r.body());
    }

    @Test
    void theShippedSimulatorSecretIsHeardFromLoopbackOnly() throws Exception {
        String outside = nonLoopbackAddress();
        assumeTrue(outside != null, "this machine has no non-loopback IPv4 address");

        ApiClient.Response refused = webhook(outside, "simulator", SHIPPED);
        assertThat(refused.status()).as(refused.text()).isEqualTo(401);
        assertThat(refused.code()).isEqualTo("invalid_signature");
        assertThat(refused.json().path("detail").asText()).contains("shipped simulator secret")
                .contains("jobgate.simulator.webhook-secret");

        ApiClient.Response local = webhook("127.0.0.1", "simulator", SHIPPED);
        assertThat(local.status()).as(local.text()).isEqualTo(200);
        assertThat(local.json().path("matched").asBoolean()).isFalse();

        // Only the shipped secret is bound to loopback: a provider's own secret is heard from outside.
        ApiClient.Response own = webhook(outside, "fakeasync", OWN);
        assertThat(own.status()).as(own.text()).isEqualTo(200);
        assertThat(own.json().path("matched").asBoolean()).isFalse();
        // And the shipped one signs nothing for it.
        assertThat(webhook(outside, "fakeasync", SHIPPED).status()).isEqualTo(401);
    }

    @Test
    void theRuleOutsideTheServer() {
        assertThat(WebhooksApi.shippedSecretRefused(SHIPPED, false, false)).as("from outside").isTrue();
        assertThat(WebhooksApi.shippedSecretRefused(" " + SHIPPED + " ", false, false)).as("padded").isTrue();
        assertThat(WebhooksApi.shippedSecretRefused(SHIPPED, true, false)).as("from loopback").isFalse();
        assertThat(WebhooksApi.shippedSecretRefused(SHIPPED, false, true)).as("jobgate.demo = true").isFalse();
        assertThat(WebhooksApi.shippedSecretRefused(OWN, false, false)).as("a secret of its own").isFalse();
    }
}
