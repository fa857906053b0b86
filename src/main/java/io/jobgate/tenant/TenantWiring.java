package io.jobgate.tenant;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

import io.jobgate.common.SettingsReader;
import io.jobgate.common.StartRefused;
import org.apache.camel.CamelContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The wiring of tenant: the tenants' files read, and refused at start when a shipped demo secret would answer beyond this machine. */
public final class TenantWiring {

    private static final Logger LOG = LoggerFactory.getLogger(TenantWiring.class);

    private TenantWiring() {
    }

    /** @param servesApi whether this instance runs the API role (its HTTP doors listen here) */
    public static TenantDirectory bind(CamelContext context, SettingsReader settings, boolean servesApi) throws IOException {
        TenantDirectory tenants = TenantDirectory.load(Arrays.stream(settings.required("jobgate.tenants.files").split(","))
                .map(String::trim).map(Path::of).toList());
        // A shipped demo secret never answers beyond this machine: checked before anything listens.
        List<String> reachable = DemoCredentials.reachable(tenants,
                servesApi ? settings.optional("jobgate.admin.api-key-sha256").orElse(null) : null,
                servesApi && settings.bool("jobgate.simulator.enabled")
                        ? settings.optional("jobgate.simulator.webhook-secret").orElse(null) : null,
                servesApi ? settings.optional("camel.server.host").orElse("") : "127.0.0.1",
                settings.optional("jobgate.broker.url").isPresent() ? null
                        : settings.required("jobgate.broker.embedded-host"));
        if (!reachable.isEmpty()) {
            if (!settings.bool("jobgate.demo")) {
                throw new StartRefused("refusing to start: a shipped demo credential would answer beyond this machine: "
                        + String.join("; ", reachable) + ". Replace it with a secret of your own (its SHA-256 where the file "
                        + "names it; docs/operating.md, \"Demo credentials\"), listen on loopback (camel.server.host = 127.0.0.1), "
                        + "or set jobgate.demo = true (JOBGATE_DEMO=true) to run the demo on a reachable address");
            }
            reachable.forEach(line -> LOG.warn("demo credential reachable beyond this machine (jobgate.demo = true): {}", line));
        }
        context.getRegistry().bind("tenantDirectory", tenants);
        return tenants;
    }
}
