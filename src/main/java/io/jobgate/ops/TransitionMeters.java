package io.jobgate.ops;

import java.time.Duration;
import java.util.EnumSet;
import java.util.Set;

import io.jobgate.job.JobStatus;
import io.jobgate.job.JobTransitions;
import io.jobgate.job.JobTransitions.Event;

/**
 * The meters that follow a job's transitions, in one place (the state machine's observer instead of
 * calls scattered over worker, reconciler, sweeper and API): terminal jobs, units of succeeded jobs,
 * refunds, and the reconciliation lag. Counted on the instance that made the transition.
 */
public final class TransitionMeters implements JobTransitions.Observer {

    /** States in which a job waits for evidence from its provider. */
    static final Set<JobStatus> WAITING_ON_PROVIDER = EnumSet.of(JobStatus.PROVIDER_PENDING, JobStatus.SUBMISSION_UNKNOWN);

    private final Meters meters;

    public TransitionMeters(Meters meters) {
        this.meters = meters;
    }

    @Override
    public void moved(Event event, JobTransitions.Moved moved, JobTransitions.Change change) {
        String tenant = moved.tenantId();
        if (event.has(JobTransitions.Effect.FINALIZE)) {
            // A job that ran out of attempts or lifetime right after a 429 is a 429-caused failure.
            meters.jobFinished(tenant, event.to().wire(), change.cause() != null ? change.cause() : change.category());
        }
        if (event == Event.SUCCEED && moved.units() != null && moved.unit() != null) {
            meters.unitsCompleted(moved.provider(), tenant, unitLabel(moved.unit()), moved.units().doubleValue());
        }
        if (moved.refundedMicros() > 0) {
            meters.ledger(tenant, "refund", moved.refundedMicros());
        }
        if (moved.redebitedMicros() > 0) {
            meters.ledger(tenant, "debit", moved.redebitedMicros());
        }
        if (isEvidence(event, moved, change)) {
            meters.reconciled(Duration.between(moved.enteredAt(), moved.at()));
        }
    }

    /**
     * Evidence about a waiting job applied: the task found, the job succeeded, failed or resubmitted
     * on the provider's word. A tenant's cancel and the reconciliation horizon's give-up are no evidence.
     */
    static boolean isEvidence(Event event, JobTransitions.Moved moved, JobTransitions.Change change) {
        return WAITING_ON_PROVIDER.contains(moved.from()) && event != Event.CANCEL
                && !(event == Event.FAIL && "expired".equals(change.category()));
    }

    /** The ledger meters {@code images} and {@code audio_minutes}; a series' unit label is singular. */
    static String unitLabel(String ledgerUnit) {
        return ledgerUnit.endsWith("s") ? ledgerUnit.substring(0, ledgerUnit.length() - 1) : ledgerUnit;
    }
}
