package io.jobgate.worker;

import io.jobgate.job.JobLeases;
import io.jobgate.job.Lease;

import io.jobgate.adapter.AdapterResult;
import io.jobgate.adapter.ProviderCancel;
import io.jobgate.job.ErrorCategory;
import io.jobgate.ops.Meters;
import io.jobgate.output.OutputStore;
import io.jobgate.output.StoreResult;
import io.jobgate.provider.Provider;
import org.apache.camel.Exchange;

/**
 * The worker route's last step (routes/worker.camel.yaml, {@code record}): an attempt's outcome,
 * written under its lease. The output is finished first (object storage, outside the transaction);
 * then the job's move and the attempt's close commit together ({@link AttemptDecisions}); then what
 * was decided is counted and logged, one line per attempt.
 */
public final class OutcomeRecorder {

    private final JobLeases leases;
    private final OutputStore outputs;
    private final AttemptDecisions decisions;
    private final Meters meters;
    private final ProviderCancel providerCancel;

    /** @param providerCancel stops a task the provider started for a job its tenant cancelled meanwhile */
    public OutcomeRecorder(JobLeases leases, OutputStore outputs, AttemptDecisions decisions, Meters meters,
                           ProviderCancel providerCancel) {
        this.leases = leases;
        this.outputs = outputs;
        this.decisions = decisions;
        this.meters = meters;
        this.providerCancel = providerCancel;
    }

    /** Step 6: the outcome, recorded under the lease; one log line per attempt. */
    public void record(Exchange exchange) {
        Worker.Called called = exchange.getProperty(Worker.CALLED, Worker.Called.class);
        Lease lease = called.started().lease();
        Provider provider = called.started().provider();
        AdapterResult answered = called.result();
        String promoted = null;
        boolean superseded = false;
        String held = null;
        if (answered.succeeded()) {
            StoreResult stored = outputs.finish(exchange); // object storage: outside the transaction below
            if (stored instanceof StoreResult.Promoted p) {
                promoted = p.record();
            } else if (stored instanceof StoreResult.Held h) {
                held = h.record(); // a canary candidate's checked output: kept in quarantine, never the job's
            } else if (stored instanceof StoreResult.Superseded) {
                superseded = true;
            } else if (stored instanceof StoreResult.Refused r) {
                answered = answered.failedAs(r.category(), r.message());
            }
        }
        AdapterResult result = answered;
        String record = promoted;
        boolean lost = superseded;
        String heldRecord = held;
        // The job's move and the attempt's close commit together: a process that died between them
        // would leave an attempt open that nothing closes (the job no longer holds the lease by which
        // the sweeper closes the attempts of dead workers).
        AttemptDecisions.Decision d = leases.inOneTransaction(() -> decisions.decide(called, result, record, heldRecord, lost));
        String outcome = d.outcome();
        // The tenant cancelled while the call was in flight: an expected ending, whatever the call
        // answered (an aborted call reads as ambiguous), so the attempt's line says so at INFO.
        boolean cancelledInFlight = outcome.equals("lease_lost") && leases.cancelled(lease.jobId());
        if (cancelledInFlight) {
            outcome = "cancelled_in_flight";
            if (result.pending() && result.providerTask() != null) {
                // Its submit was on the wire: the task the provider just started is stopped too.
                providerCancel.orphaned(lease.jobId(), provider, result.providerTask(), result.providerState());
            }
        }
        if (d.late() || outcome.equals("lease_lost")) {
            // An answer that came back after its lease ran out: finalized (or its task adopted) when the job
            // still waited on this attempt, else kept on its attempt (status, billed units) for the record.
            meters.lateAnswer(provider.name(), d.late() ? "finalized" : "recorded");
        }
        String counted = result.succeeded() || result.pending() ? d.outcome()
                : result.category() == null ? outcome : result.category().wire();
        meters.attempt(provider.name(), lease.tenantId(), counted);
        meters.revisionAttempt(provider.name(), called.started().revision(), counted);
        if (result.category() == ErrorCategory.RATE_LIMITED) {
            meters.rateLimited(provider.name(), lease.tenantId());
        }
        AttemptLog.write(new AttemptLog.Line(lease.jobId().toString(), lease.correlationId(), lease.presetId(),
                lease.presetVersion(), lease.aspectClass(), provider.name(), called.started().revision(), called.started().attempt(),
                called.durationMs(), result.httpStatus(), outcome,
                result.category() == null || cancelledInFlight ? null : result.category().wire(), d.next()));
    }
}
