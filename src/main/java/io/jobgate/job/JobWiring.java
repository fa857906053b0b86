package io.jobgate.job;

import java.time.Clock;
import java.util.Map;

import io.jobgate.common.SettingsReader;
import org.apache.camel.CamelContext;
import org.apache.camel.StartupListener;
import org.apache.camel.spi.Registry;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.namedparam.NamedParameterJdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

/** The wiring of job: the jobs table's reads, the state machine and its one finalize, the provider gates and slots, the worker's door ({@link JobLeases}). */
public final class JobWiring {

    private JobWiring() {
    }

    public record Jobs(JobStore store, JobTransitions transitions, JobFinalizer finalizer, ProviderGates gates,
                       CandidateAttempts candidateAttempts, JobLeases leases) {
    }

    /** @param callLimits each provider's calls allowed at once (its max-concurrency), by name */
    public static Jobs bind(CamelContext context, SettingsReader settings, JdbcTemplate jdbc, TransactionTemplate transactions,
                            Clock clock, Map<String, Integer> callLimits) throws Exception {
        Registry registry = context.getRegistry();
        JobStore jobs = new JobStore(jdbc);
        JobTransitions transitions = new JobTransitions(new NamedParameterJdbcTemplate(jdbc), transactions, clock);
        JobFinalizer finalizer = new JobFinalizer(transitions).refunding(
                settings.intValue("jobgate.refunds.failed-percent", 0, 100),
                settings.intValue("jobgate.refunds.cancelled-percent", 0, 100));
        registry.bind("jobStore", jobs);
        registry.bind("jobTransitions", transitions);
        registry.bind("jobFinalizer", finalizer);
        // Each provider's slot rows (V19) exist before its first call, so a start claims its slot in one statement:
        // made as the context starts, before any route (the database is still starting while this method runs).
        ProviderSlots slotRows = new ProviderSlots(jdbc);
        context.addStartupListener(new StartupListener() {
            @Override
            public void onCamelContextStarted(CamelContext started, boolean alreadyStarted) {
                callLimits.forEach(slotRows::ensureRows);
            }
        });
        ProviderGates gates = new ProviderGates(jdbc, transactions, clock);
        registry.bind("providerGates", gates);
        CandidateAttempts candidateAttempts = new CandidateAttempts(jdbc, transactions, transitions);
        // The worker's one door to a job: every write of a start and of a decision on an answer.
        JobLeases leases = new JobLeases(jdbc, transactions, transitions, finalizer, gates, candidateAttempts);
        registry.bind("jobLeases", leases);
        return new Jobs(jobs, transitions, finalizer, gates, candidateAttempts, leases);
    }
}
