package io.jobgate.tenant;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import io.jobgate.common.Digests;

/**
 * The credentials shipped for the demo (config/tenants.yaml, the admin key's default digest, the bundled
 * simulator's webhook secret) are known to anyone who read the README or the settings file. They may answer
 * on loopback, where only this machine reaches them; a gateway that would accept one of them on a reachable
 * address refuses to start, naming each and how to replace it, unless {@code jobgate.demo = true} says a
 * reachable demo is what is wanted. The simulator's secret is refused once more per request
 * ({@link #shippedWebhookSecret}): with the simulator off the provider {@code simulator} still verifies with it.
 */
public final class DemoCredentials {

    /** The shipped demo secrets by what they are, as the README and docs print them. */
    private static final Map<String, String> SHIPPED = Map.of(
            Digests.sha256Hex("dev-acme-key"), "dev-acme-key",
            Digests.sha256Hex("dev-globex-key"), "dev-globex-key",
            Digests.sha256Hex("dev-admin-key"), "dev-admin-key",
            Digests.sha256Hex("dev-acme-jms"), "dev-acme-jms",
            Digests.sha256Hex("dev-globex-jms"), "dev-globex-jms");

    /**
     * The digest of the bundled simulator's development webhook secret ({@code jobgate.simulator.webhook-secret}
     * as config/application.properties ships it): a digest, so that the value itself stays in one place;
     * DemoCredentialsTest fails when the settings file ships another.
     */
    static final String SIMULATOR_WEBHOOK_SECRET_SHA256 = "df008f0bea58d14ad3fa35717c5c66c9af8998994c5b92c27ac9ff6a9efff10d";

    private DemoCredentials() {
    }

    /** Is this the shipped simulator webhook secret, which anyone can sign with? */
    public static boolean shippedWebhookSecret(String secret) {
        return secret != null && Digests.sha256Hex(secret.trim()).equals(SIMULATOR_WEBHOOK_SECRET_SHA256);
    }

    /** Is this digest one of the shipped demo secrets? */
    public static boolean shipped(String sha256) {
        return sha256 != null && SHIPPED.containsKey(sha256.toLowerCase(java.util.Locale.ROOT));
    }

    /**
     * What would be reachable beyond this machine with a shipped secret: one line each, empty when
     * nothing is.
     *
     * @param httpHost     where the HTTP API listens ({@code camel.server.host})
     * @param brokerHost   where the embedded broker listens for JMS producers, null when the broker is external
     *                     (its own users and passwords are its own)
     * @param adminSha256  the operator key's digest ({@code jobgate.admin.api-key-sha256}), null if none
     * @param simulatorWebhookSecret the bundled simulator's webhook secret ({@code jobgate.simulator.webhook-secret}),
     *                     null when the simulator does not run with this gateway
     */
    public static List<String> reachable(TenantDirectory tenants, String adminSha256, String simulatorWebhookSecret,
                                         String httpHost, String brokerHost) {
        List<String> found = new ArrayList<>();
        if (!loopback(httpHost)) {
            for (Tenant tenant : tenants.all()) {
                if (shipped(tenant.apiKeySha256())) {
                    found.add("tenant " + tenant.id() + " has the demo API key '" + SHIPPED.get(tenant.apiKeySha256())
                            + "' (api_key_sha256 in its tenants file) and the API listens on " + httpHost);
                }
            }
            if (shipped(adminSha256)) {
                found.add("the operator key is the demo key 'dev-admin-key' (jobgate.admin.api-key-sha256, "
                        + "JOBGATE_ADMIN_API_KEY_SHA256) and the API listens on " + httpHost);
            }
            if (shippedWebhookSecret(simulatorWebhookSecret)) {
                // Anyone can sign a simulator webhook with it: the outcome of any simulator job, forged.
                found.add("the provider simulator runs with the shipped webhook secret (jobgate.simulator.webhook-secret, "
                        + "JOBGATE_SIMULATOR_WEBHOOK_SECRET; or jobgate.simulator.enabled = false) and the API listens on " + httpHost);
            }
        }
        if (brokerHost != null && !loopback(brokerHost)) {
            for (TenantDirectory.BrokerProducer producer : tenants.brokerProducers()) {
                if (shipped(producer.passwordSha256())) {
                    found.add("JMS producer " + producer.user() + " of tenant " + producer.tenantId() + " has the demo password '"
                            + SHIPPED.get(producer.passwordSha256()) + "' (password_sha256) and the embedded broker listens on "
                            + brokerHost);
                }
            }
        }
        return found;
    }

    /** Loopback only: a loopback name or address; the wildcard (0.0.0.0, ::) and anything else are reachable. */
    static boolean loopback(String host) {
        if (host == null || host.isBlank()) {
            return false; // the server's default is every interface
        }
        String h = host.trim();
        if (h.equals("localhost")) {
            return true;
        }
        try {
            InetAddress address = InetAddress.getByName(h.startsWith("[") ? h.substring(1, h.length() - 1) : h);
            return address.isLoopbackAddress();
        } catch (UnknownHostException e) {
            return false;
        }
    }
}
