package io.jobgate.reconcile;

import java.nio.file.Path;
import java.time.Instant;

import io.jobgate.job.WaitingJob;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import io.jobgate.job.JobStatus;
import org.apache.camel.Body;
import org.apache.camel.Exchange;
import org.apache.camel.ExchangeProperty;
import org.apache.camel.builder.NotifyBuilder;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.model.Model;
import org.apache.camel.model.ProcessorDefinition;
import org.apache.camel.model.TryDefinition;
import org.apache.camel.support.PluginHelper;
import org.apache.camel.support.ResourceHelper;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * routes/reconciler.camel.yaml shows the poller's flow by step id, and keeps each job's check apart:
 * a check that fails, in asking or in applying, is logged and the others are still asked. The
 * reconciler bean is a stand-in here (the route is the subject; ReconciliationTest runs the real one).
 */
class ReconcilerRouteTest {

    static final String ROUTES = "file:" + Path.of("routes/reconciler.camel.yaml").toAbsolutePath();

    @Test
    void theRouteNamesEachStepOfThePollInOrder() throws Exception {
        try (DefaultCamelContext context = load(new StandIn(List.of()))) {
            Model model = context.getCamelContextExtension().getContextPlugin(Model.class);
            List<String> ids = new ArrayList<>();
            model.getRouteDefinition("reconciler").getOutputs().forEach(step -> collectIds(step, ids));
            assertThat(ids).containsExactly("claim-due", "each-waiting-job", "check-job", "ask-provider", "apply-evidence",
                    "check-failed", "log-check-failure");
        }
    }

    @Test
    void aFailedCheckIsLoggedAndTheOtherJobsAreStillAsked() throws Exception {
        WaitingJob fine = job(), lookupFails = job(), applyFails = job(), last = job();
        StandIn reconciler = new StandIn(List.of(fine, lookupFails, applyFails, last));
        reconciler.failAsking = lookupFails;
        reconciler.failApplying = applyFails;
        try (DefaultCamelContext context = load(reconciler)) {
            // The poll's own exchange, not one of its split's: those come from the route too.
            NotifyBuilder polled = new NotifyBuilder(context).fromRoute("reconciler").filter(ReconcilerRouteTest::poll)
                    .whenDone(1).create();
            NotifyBuilder completed = new NotifyBuilder(context).fromRoute("reconciler").filter(ReconcilerRouteTest::poll)
                    .whenCompleted(1).create();
            context.start();

            assertThat(polled.matches(15, TimeUnit.SECONDS)).isTrue();
            // Its own notifier, told of the same exchange a moment apart from the one above: waited on, not read at once.
            assertThat(completed.matches(5, TimeUnit.SECONDS)).as("the poll itself does not fail").isTrue();
            assertThat(reconciler.asked).containsExactlyInAnyOrder(fine, lookupFails, applyFails, last);
            assertThat(reconciler.applied).containsExactlyInAnyOrder(fine, last);
            assertThat(reconciler.failed).containsExactlyInAnyOrder(
                    "job " + lookupFails.jobId() + " (asking): java.lang.IllegalStateException: lookup broke",
                    "job " + applyFails.jobId() + " (applying): java.lang.IllegalStateException: apply broke");
        }
    }

    private static boolean poll(Exchange exchange) {
        return exchange.getProperty(Exchange.SPLIT_INDEX) == null;
    }

    private static void collectIds(ProcessorDefinition<?> step, List<String> ids) {
        if (step.hasCustomIdAssigned()) {
            ids.add(step.getId());
        }
        step.getOutputs().forEach(child -> collectIds(child, ids));
        if (step instanceof TryDefinition attempt) { // a doTry's doCatch is not among its outputs
            attempt.getCatchClauses().forEach(clause -> collectIds(clause, ids));
        }
    }

    private static DefaultCamelContext load(StandIn reconciler) throws Exception {
        DefaultCamelContext context = new DefaultCamelContext();
        Properties settings = new Properties();
        settings.setProperty("jobgate.runs.reconciler", "true");
        settings.setProperty("jobgate.reconcile.period-ms", "3600000"); // one poll (the route's timer waits 1 s)
        context.getPropertiesComponent().setInitialProperties(settings);
        context.getRegistry().bind("reconciler", reconciler);
        // As ReconcileWiring binds it: the pool a poll's claimed checks run on, several at once.
        context.getRegistry().bind("reconcileChecks", java.util.concurrent.Executors.newFixedThreadPool(2));
        PluginHelper.getRoutesLoader(context).loadRoutes(ResourceHelper.resolveResource(context, ROUTES));
        return context;
    }

    private static WaitingJob job() {
        return new WaitingJob(UUID.randomUUID(), JobStatus.PROVIDER_PENDING, "fakeasync", "task", null, 1, 3,
                Instant.now().plusSeconds(3600), 1, "preset", 1, "image", "acme", "square", "{}", null, null, null, null, 0,
                io.jobgate.job.RevisionRole.STABLE);
    }

    /** The reconciler's route steps, recording what each was given. */
    public static final class StandIn {
        final List<WaitingJob> due;
        // The poll's checks run at once (the route's split, on reconcileChecks): lists several threads add to.
        final List<WaitingJob> asked = java.util.Collections.synchronizedList(new ArrayList<>());
        final List<WaitingJob> applied = java.util.Collections.synchronizedList(new ArrayList<>());
        final List<String> failed = java.util.Collections.synchronizedList(new ArrayList<>());
        WaitingJob failAsking;
        WaitingJob failApplying;

        StandIn(List<WaitingJob> due) {
            this.due = due;
        }

        public List<WaitingJob> claimDue() {
            return due;
        }

        public Lookup askProvider(WaitingJob job) {
            asked.add(job);
            if (job == failAsking) {
                throw new IllegalStateException("lookup broke", new IllegalArgumentException("its cause"));
            }
            return Lookup.noSettings(job);
        }

        public Reconciler.Applied applyEvidence(Lookup lookup) {
            if (lookup.job() == failApplying) {
                throw new IllegalStateException("apply broke");
            }
            applied.add(lookup.job());
            return new Reconciler.Applied(false, "stand-in");
        }

        public void checkFailed(@Body Object item, @ExchangeProperty(Exchange.EXCEPTION_CAUGHT) Throwable failure) {
            String where = item instanceof Lookup lookup ? "job " + lookup.job().jobId() + " (applying)"
                    : "job " + ((WaitingJob) item).jobId() + " (asking)";
            failed.add(where + ": " + failure);
        }

        public int catchUp() {
            return 0;
        }
    }
}
