package io.jobgate.job;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

import static java.util.Map.entry;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * One door to a job's tables: SQL that names {@code jobs} or {@code attempts} lives in {@code job/}. What else names
 * them is listed here with the reason it may; new SQL elsewhere fails this test, and so does an entry whose file no
 * longer needs it (the list shrinks as statements move into {@code job/}).
 */
class JobTablesDoorTest {

    static final Pattern NAMES_A_JOB_TABLE = Pattern.compile("\\b(FROM|UPDATE|INTO|JOIN)\\s+(jobs|attempts)\\b");

    static final Map<String, String> ALLOWED = Map.ofEntries(
            entry("src/main/java/io/jobgate/admission/AdmissionWriter.java",
                    "the admission insert: a job is born in the same group-committed statement as its idempotency key and ledger lines"),
            entry("src/main/resources/sql/relay-claim-dispatch.sql",
                    "the relay's fair round: one statement reads the due events with their jobs' tenants and marks them dispatched"),
            entry("src/main/java/io/jobgate/worker/Sweeper.java",
                    "an ended instance's row is forgotten only when no job names it (gateway_instances, not a job's row)"),
            entry("src/main/java/io/jobgate/worker/Retention.java",
                    "published outbox events are removed once their job is final (reads finalized_at)"),
            entry("src/main/java/io/jobgate/upload/UploadRetention.java",
                    "an expired upload is removed only when no job uses it (reads jobs.upload_id)"),
            entry("src/main/java/io/jobgate/workers/WorkerOutputRetention.java",
                    "a worker's stored output is removed once its task's job is final (reads finalized_at)"),
            entry("src/main/java/io/jobgate/workers/WorkerTasks.java",
                    "a lease round hands tasks out one per tenant per round: it reads its tasks' jobs' tenant_id (read only)"),
            entry("src/main/java/io/jobgate/usage/UsageReport.java", "the usage read model: ledger lines by their jobs' kind and provider"),
            entry("src/main/java/io/jobgate/usage/UsageRollups.java", "the usage read model's rollup of ledger lines by job"),
            entry("src/main/java/io/jobgate/evaluation/Evaluations.java", "reads the outputs of attempts to score them (read only)"),
            entry("src/main/java/io/jobgate/summary/SummaryOrders.java", "a summary is ordered once its transcript's job ended (read only)"),
            entry("src/main/java/io/jobgate/console/Overview.java",
                    "the operator console's overview, read only and at most every 5 s for all viewers: open jobs by tenant and status, "
                            + "succeeded jobs per minute of the last hour"),
            entry("src/main/java/io/jobgate/console/Failures.java",
                    "the operator console's failures, read only: failed jobs grouped by category and message, a group's ids to redrive"),
            entry("src/main/java/io/jobgate/canary/CanaryStore.java",
                    "counts of a candidate's attempts, read only: its gates' window and quality, its first sample, the operator's view"));

    @Test
    void sqlNamingAJobTableLivesInJobOrIsListedWithItsReason() throws IOException {
        Set<String> naming = new TreeSet<>();
        for (String root : new String[] {"src/main/java/io/jobgate", "src/main/resources/sql"}) {
            try (Stream<Path> files = Files.walk(Path.of(root))) {
                for (Path f : files.filter(Files::isRegularFile).toList()) {
                    String path = f.toString().replace('\\', '/');
                    if (path.startsWith("src/main/java/io/jobgate/job/")) {
                        continue;
                    }
                    if (NAMES_A_JOB_TABLE.matcher(Files.readString(f)).find()) {
                        naming.add(path);
                    }
                }
            }
        }
        assertThat(naming).as("files outside job/ whose SQL names jobs or attempts").isEqualTo(new TreeSet<>(ALLOWED.keySet()));
        assertThat(ALLOWED.values()).allSatisfy(reason -> assertThat(reason).isNotBlank());
    }

    /**
     * A test changes a job's row by hand only to play a concurrent writer against a lock, or the database's own guards
     * against a raw statement; every other change a test needs (a job ended behind the gateway's back, a lease taken
     * over, a check rescheduled) is the job factory's, named for what happened.
     */
    static final Map<String, String> TESTS_UPDATING_BY_HAND = Map.ofEntries(
            entry("JobTransitionsLocksTest.java", "concurrent writers holding a job's row lock on connections of their own"),
            entry("JobTransitionsTest.java", "the database's guard of status pairs, tried with raw statements"),
            entry("WorkerStartsTest.java", "a concurrent finalize holding its locks on a connection of its own"),
            entry("AdmissionApiTest.java", "a transition's row lock held on a connection of its own against an idempotent replay"),
            entry("AdmissionWriterLocksTest.java", "a cancel holding the job's row lock on a connection of its own"),
            entry("ErrorTableTest.java", "a final job past its lifetime: final rows are unchangeable, so the guard is off for one statement"),
            entry("ReconciliationTest.java", "the database's guard refusing a final job's change, tried with a raw statement"),
            entry("RelayRoundsTest.java", "the relay's bookkeeping reset between tests: outbox, counters and the jobs' dispatch marks together"),
            entry("CanaryRollbackTest.java", "a job moved on to its next attempt between a lookup's read and its write"));

    /** Tests make a job, its attempts and its ledger lines through the job factory, not by hand. */
    @Test
    void testsMakeJobsThroughTheFactory() throws IOException {
        Pattern writesARow = Pattern.compile("INSERT INTO (jobs|attempts)\\b");
        Pattern changesARow = Pattern.compile("UPDATE (jobs|attempts)\\b");
        Set<String> byHand = new TreeSet<>();
        Set<String> changing = new TreeSet<>();
        try (Stream<Path> files = Files.walk(Path.of("src/test/java"))) {
            for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
                if (f.endsWith("JobFactory.java") || f.endsWith("JobTablesDoorTest.java")) {
                    continue;
                }
                String text = Files.readString(f);
                if (writesARow.matcher(text).find()) {
                    byHand.add(f.toString());
                }
                if (changesARow.matcher(text).find()) {
                    changing.add(f.getFileName().toString());
                }
            }
        }
        assertThat(byHand).as("tests inserting jobs or attempts by hand (use support/JobFactory)").isEmpty();
        assertThat(changing).as("tests changing a job's row by hand (use support/JobFactory, or list the test with its reason)")
                .isEqualTo(new TreeSet<>(TESTS_UPDATING_BY_HAND.keySet()));
    }
}
