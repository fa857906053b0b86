package io.jobgate.workers;

/**
 * The long polls of a pull member's workers parked on this instance (the API's {@code LeaseWaits}), as the member's
 * submit sees them: a task written while one waits is leased to it in the same statement that writes it and handed
 * to its poll as the answer, with no lease call of its own (docs/workers.md, "A task goes to a waiting worker").
 */
public interface WaitingWorkers {

    /**
     * Takes the longest-waiting poll of {@code member} whose worker may render a task of revision label
     * {@code revisionLabel} (null: any worker may): once taken, no other task, timer or disconnect ends it but through
     * the returned handle, which must be ended once. Null when none waits here.
     */
    Poll take(String member, String revisionLabel);

    /** A poll taken: answered with its lease, or given back to lease as if woken. */
    interface Poll {

        /** The worker that asked, as its lease names it. */
        String workerId();

        /** Answers the poll: {@code answer} is the lease call's body ({@link LeaseEnvelope#answer}). */
        void leased(String answer);

        /** No task was leased to it after all: the poll goes on to the lease call, as a woken one does. */
        void giveBack();
    }
}
