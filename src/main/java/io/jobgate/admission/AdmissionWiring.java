package io.jobgate.admission;

import java.time.Clock;

import io.jobgate.infra.InfraWiring;
import io.jobgate.infra.Settings;
import io.jobgate.job.JobStore;
import io.jobgate.pool.PoolPlacer;
import io.jobgate.preset.PresetCatalog;
import io.jobgate.provider.ProviderCatalog;
import io.jobgate.relay.RelayWiring;
import io.jobgate.upload.UploadStore;
import org.apache.camel.CamelContext;
import org.apache.camel.spi.Registry;

/** The wiring of admission: its limits, the group-committed writer (a Camel service), the service the doors call. */
public final class AdmissionWiring {

    private AdmissionWiring() {
    }

    /** @param placement where a new job goes and what it costs: shared with the summaries ordered for transcriptions */
    public record Admission(AdmissionLimits limits, AdmissionWriter writer, AdmissionService service, AdmissionPlacement placement) {
    }

    /** @param webhookEndpoints a tenant's enabled webhook endpoint at a URL, which a job may name */
    public static Admission bind(CamelContext context, Settings settings, InfraWiring.Stores stores, Clock clock, PresetCatalog presets,
                                 ProviderCatalog providers, UploadStore uploads, JobStore jobs, RelayWiring.Relay relay,
                                 AdmissionService.WebhookEndpointLookup webhookEndpoints, PoolPlacer pools) throws Exception {
        Registry registry = context.getRegistry();
        AdmissionLimits limits = AdmissionLimits.from(settings);
        AdmissionWriter writer = new AdmissionWriter(stores.dataSource(), limits, relay.instanceId());
        writer.afterCommit(relay.wakeup()::wake);
        context.addService(writer, true, true);
        AdmissionPlacement placement = new AdmissionPlacement(providers, pools);
        AdmissionService admission = new AdmissionService(clock, presets, providers, uploads, jobs, writer, limits, webhookEndpoints,
                placement);
        registry.bind("admissionWriter", writer);
        registry.bind("admissionService", admission);
        return new Admission(limits, writer, admission, placement);
    }
}
