package io.jobgate.reconcile;

import io.jobgate.adapter.AdapterCaller;
import io.jobgate.adapter.Backoff;
import io.jobgate.canary.Canaries;
import io.jobgate.infra.Settings;
import io.jobgate.job.JobWiring;
import io.jobgate.output.OutputStore;
import io.jobgate.preset.PresetCatalog;
import io.jobgate.provider.ProviderCatalog;
import org.apache.camel.CamelContext;
import org.springframework.jdbc.core.JdbcTemplate;

/** The wiring of reconcile: the reconciler that applies evidence from the poller, webhooks and operators. */
public final class ReconcileWiring {

    private ReconcileWiring() {
    }

    public static Reconciler bind(CamelContext context, Settings settings, JdbcTemplate jdbc, JobWiring.Jobs jobs, ProviderCatalog providers,
                                  PresetCatalog presets, AdapterCaller adapters, OutputStore outputs, Backoff backoff, Canaries canaries) {
        ReconcileSettings reconcile = ReconcileSettings.from(settings);
        Reconciler reconciler = new Reconciler(jdbc, jobs.transitions(), jobs.finalizer(), providers, presets, adapters, outputs,
                jobs.gates(), reconcile, backoff, canaries, jobs.candidateAttempts());
        context.getRegistry().bind("reconciler", reconciler);
        // A poll's claimed checks run this many at once (routes/reconciler.camel.yaml): one at a time, a provider whose
        // jobs are all checked by polling was carried only as fast as one thread asked, stored and finalized.
        context.getRegistry().bind("reconcileChecks", context.getExecutorServiceManager().newFixedThreadPool(reconciler,
                "reconcile-check", reconcile.concurrency()));
        return reconciler;
    }
}
