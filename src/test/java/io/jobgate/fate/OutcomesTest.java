package io.jobgate.fate;

import io.jobgate.job.ErrorCategory;
import io.jobgate.job.RevisionRole;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import static io.jobgate.job.ErrorCategory.AMBIGUOUS;
import static io.jobgate.job.ErrorCategory.EXHAUSTED;
import static io.jobgate.job.ErrorCategory.EXPIRED;
import static io.jobgate.job.ErrorCategory.RATE_LIMITED;
import static io.jobgate.job.ErrorCategory.TRANSIENT;
import static io.jobgate.job.ErrorCategory.UNPARSEABLE_RESPONSE;
import static io.jobgate.job.RevisionRole.CANDIDATE;
import static io.jobgate.job.RevisionRole.STABLE;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The outcome decision as a table: every kind of evidence × the attempt's role × where the job stands against its
 * caps, each row with the whole decision expected (records compared by equality, messages verbatim). This table is
 * the rulebook's specification: a rule changed without its row fails here.
 */
class OutcomesTest {

    static final Instant NOW = Instant.parse("2026-01-01T00:00:00Z");
    /** Backoff 10 s, a rate-limit backoff of 60 s, the next check in 30 s, a found task's first check in 5 s. */
    static final Waits WAITS = new Waits(Duration.ofSeconds(10), Duration.ofSeconds(60), Duration.ofSeconds(30), Duration.ofSeconds(5));

    /** Attempt 1 of 3, an hour of lifetime left, no unparseable reply yet. */
    static final Standing ROOM = new Standing(1, 3, NOW.plusSeconds(3600), 0);
    /** The same, after one unparseable reply. */
    static final Standing ONE_UNPARSEABLE = new Standing(1, 3, NOW.plusSeconds(3600), 1);
    /** All three attempts used. */
    static final Standing USED = new Standing(3, 3, NOW.plusSeconds(3600), 0);
    /** Five seconds of lifetime left: a retry after the 10 s backoff would pass it. */
    static final Standing LATE = new Standing(1, 3, NOW.plusSeconds(5), 0);
    /** The lifetime ends now: not even an attempt now may start. */
    static final Standing OVER = new Standing(1, 3, NOW, 0);

    record Row(String name, Evidence evidence, RevisionRole role, Standing standing, Fate expected) {
        @Override
        public String toString() {
            return name;
        }
    }

    static Row row(String name, Evidence evidence, RevisionRole role, Standing standing, Fate expected) {
        return new Row(name, evidence, role, standing, expected);
    }

    static Evidence.Failure failure(ErrorCategory category, String message) {
        return new Evidence.Failure(category, message, null);
    }

    static Evidence.Failure tooMany(String retryAfter) {
        return new Evidence.Failure(RATE_LIMITED, "HTTP 429", retryAfter);
    }

    static Fate.RateLimit providerGate(long seconds, Boolean understood) {
        return new Fate.RateLimit(NOW.plusSeconds(seconds), understood, false);
    }

    static Fate.Fail fail(ErrorCategory category, String message) {
        return new Fate.Fail(category, message, null, null);
    }

    static Fate.Retry retry(long inSeconds, int streak, ErrorCategory last) {
        return new Fate.Retry(NOW.plusSeconds(inSeconds), streak, last, null);
    }

    static String pastLifetime(long inSeconds, Instant expires, String last) {
        return "next attempt at " + NOW.plusSeconds(inSeconds) + " would pass the job's lifetime (" + expires + "); last: " + last;
    }

    static Stream<Row> rows() {
        List<Row> rows = new ArrayList<>();
        // A stable attempt's failure, whichever source brought it (the worker's call, a lookup, a webhook).
        for (ErrorCategory terminal : List.of(ErrorCategory.TERMINAL_REQUEST, ErrorCategory.AUTH, ErrorCategory.DECLINED,
                ErrorCategory.INVALID_OUTPUT, ErrorCategory.INVALID_REQUEST)) {
            rows.add(row(terminal.wire() + " fails the job, attempts left or not", failure(terminal, "refused"), STABLE, ROOM,
                    fail(terminal, "refused")));
            rows.add(row(terminal.wire() + " with every attempt used: its own category", failure(terminal, "refused"), STABLE, USED,
                    fail(terminal, "refused")));
        }
        rows.add(row("ambiguous parks the job as submission_unknown", failure(AMBIGUOUS, "timeout after sending"), STABLE, ROOM,
                new Fate.Park()));
        rows.add(row("ambiguous parks even with no attempt left", failure(AMBIGUOUS, "timeout after sending"), STABLE, USED,
                new Fate.Park()));
        rows.add(row("transient with room: retried after the backoff", failure(TRANSIENT, "HTTP 503"), STABLE, ROOM,
                retry(10, 0, TRANSIENT)));
        rows.add(row("transient with every attempt used: exhausted", failure(TRANSIENT, "HTTP 503"), STABLE, USED,
                fail(EXHAUSTED, "3 of 3 attempts used; last: transient (HTTP 503)")));
        rows.add(row("transient whose retry would pass the lifetime: expired", failure(TRANSIENT, "HTTP 503"), STABLE, LATE,
                fail(EXPIRED, pastLifetime(10, LATE.expiresAt(), "transient (HTTP 503)"))));
        rows.add(row("transient ends an unparseable streak", failure(TRANSIENT, "HTTP 503"), STABLE, ONE_UNPARSEABLE,
                retry(10, 0, TRANSIENT)));
        rows.add(row("429 with Retry-After 30: retried then, the provider's gate closed until then", tooMany("30"), STABLE, ROOM,
                new Fate.Retry(NOW.plusSeconds(30), 0, RATE_LIMITED, providerGate(30, true))));
        rows.add(row("429 with an unreadable Retry-After: the rate-limit backoff", tooMany("soon"), STABLE, ROOM,
                new Fate.Retry(NOW.plusSeconds(60), 0, RATE_LIMITED, providerGate(60, false))));
        rows.add(row("429 without Retry-After: the backoff", tooMany(null), STABLE, ROOM,
                new Fate.Retry(NOW.plusSeconds(10), 0, RATE_LIMITED, providerGate(10, null))));
        rows.add(row("429 whose Retry-After passes the lifetime: expired, caused by the 429, the gate closed still",
                tooMany("600"), STABLE, LATE, new Fate.Fail(EXPIRED, pastLifetime(600, LATE.expiresAt(), "rate_limited (HTTP 429)"),
                        "rate_limited", providerGate(600, true))));
        rows.add(row("429 on the last attempt: exhausted, caused by the 429, the gate closed still", tooMany("30"), STABLE, USED,
                new Fate.Fail(EXHAUSTED, "3 of 3 attempts used; last: rate_limited (HTTP 429)", "rate_limited", providerGate(30, true))));
        rows.add(row("a first unparseable reply: retried, counted", failure(UNPARSEABLE_RESPONSE, "garbled"), STABLE, ROOM,
                retry(10, 1, UNPARSEABLE_RESPONSE)));
        rows.add(row("a second unparseable reply in a row fails the job", failure(UNPARSEABLE_RESPONSE, "garbled"), STABLE,
                ONE_UNPARSEABLE, fail(UNPARSEABLE_RESPONSE, "two unparseable replies in a row; last: garbled")));
        rows.add(row("a first unparseable reply on the last attempt: exhausted", failure(UNPARSEABLE_RESPONSE, "garbled"), STABLE,
                USED, fail(EXHAUSTED, "3 of 3 attempts used; last: unparseable_response (garbled)")));

        // A canary candidate's evidence: never the job's.
        rows.add(row("a candidate's held output: due now on the stable revision, the streak left as it was",
                new Evidence.HeldOutput("{}"), CANDIDATE, ONE_UNPARSEABLE, retry(0, 1, null)));
        rows.add(row("a candidate's held output at the lifetime's end: expired", new Evidence.HeldOutput("{}"), CANDIDATE, OVER,
                fail(EXPIRED, pastLifetime(0, OVER.expiresAt(), "a canary candidate's output is not the job's"))));
        for (ErrorCategory any : List.of(ErrorCategory.DECLINED, ErrorCategory.TERMINAL_REQUEST, ErrorCategory.INVALID_OUTPUT,
                TRANSIENT, UNPARSEABLE_RESPONSE, AMBIGUOUS)) {
            rows.add(row("a candidate's " + any.wire() + ": its own, the job due now on the stable revision",
                    failure(any, "candidate said no"), CANDIDATE, ONE_UNPARSEABLE, retry(0, 1, any)));
        }
        rows.add(row("a candidate's 429: its own gate closed, not the provider's", tooMany("60"), CANDIDATE, ROOM,
                new Fate.Retry(NOW, 0, RATE_LIMITED, new Fate.RateLimit(NOW.plusSeconds(60), true, true))));
        rows.add(row("a candidate's failure with every attempt used: exhausted, not caused by a provider 429",
                tooMany("60"), CANDIDATE, USED, new Fate.Fail(EXHAUSTED, "3 of 3 attempts used; last: canary candidate's rate_limited (HTTP 429)",
                        null, new Fate.RateLimit(NOW.plusSeconds(60), true, true))));
        rows.add(row("a candidate's failure at the lifetime's end: expired", failure(TRANSIENT, "HTTP 503"), CANDIDATE, OVER,
                fail(EXPIRED, pastLifetime(0, OVER.expiresAt(), "canary candidate's transient (HTTP 503)"))));

        // The provider has not got the request (a lookup found nothing; a provider that deduplicates by our key).
        rows.add(row("absent with room: resubmitted after the backoff, shown as ambiguous",
                new Evidence.NotAtProvider("provider has no such request"), STABLE, ONE_UNPARSEABLE, retry(10, 0, AMBIGUOUS)));
        rows.add(row("absent with every attempt used: exhausted", new Evidence.NotAtProvider("provider has no such request"),
                STABLE, USED, fail(EXHAUSTED, "3 of 3 attempts used; last: provider has no such request")));
        rows.add(row("absent, the resubmit past the lifetime: expired", new Evidence.NotAtProvider("provider has no such request"),
                STABLE, LATE, fail(EXPIRED, pastLifetime(10, LATE.expiresAt(), "provider has no such request"))));
        rows.add(row("a candidate's task absent: due now on the stable revision",
                new Evidence.NotAtProvider("provider has no such request"), CANDIDATE, ONE_UNPARSEABLE, retry(0, 1, null)));

        // What the provider says about its task (the poller's lookup, a webhook, an operator's repair).
        rows.add(row("a checked, promoted output: the job succeeds with it", new Evidence.Output("{\"output_key\": \"o\"}"), STABLE,
                USED, new Fate.Succeed("{\"output_key\": \"o\"}")));
        rows.add(row("a task still running: asked again at the next check", new Evidence.TaskRunning("p-1", null, false), STABLE,
                ROOM, new Fate.CheckAgain(NOW.plusSeconds(30), "provider still working")));
        rows.add(row("an unknown submission's task found: waited on, first asked soon", new Evidence.TaskRunning("p-1", "s", true),
                STABLE, ROOM, new Fate.TaskFound(NOW.plusSeconds(5), "p-1", "s")));
        rows.add(row("no answer yet: asked again at the next check", new Evidence.NoAnswer("no answer yet: ambiguous"), CANDIDATE,
                USED, new Fate.CheckAgain(NOW.plusSeconds(30), "no answer yet: ambiguous")));
        rows.add(row("a provider that may not be asked now: asked when it may", new Evidence.NoAnswer("gate closed",
                NOW.plusSeconds(45)), STABLE, ROOM, new Fate.CheckAgain(NOW.plusSeconds(45), "gate closed")));

        // A lookup answered 429 that the adapter did not declare about the task: the provider wants to be left alone.
        rows.add(row("a lookup's 429 with Retry-After: the provider's gate closes, asked again at its end, whatever the caps",
                new Evidence.LookupRateLimited("120"), STABLE, USED, new Fate.CheckAgain(NOW.plusSeconds(120),
                        "rate limited: asked again at " + NOW.plusSeconds(120), new Fate.RateLimit(NOW.plusSeconds(120), true, false))));
        rows.add(row("a lookup's 429 without Retry-After: the gate closes until the next check",
                new Evidence.LookupRateLimited(null), STABLE, ROOM, new Fate.CheckAgain(NOW.plusSeconds(30),
                        "rate limited: asked again at " + NOW.plusSeconds(30), new Fate.RateLimit(NOW.plusSeconds(30), null, false))));
        rows.add(row("a lookup's 429 with a Retry-After that cannot be read: the provider's rate-limit backoff",
                new Evidence.LookupRateLimited("soon"), STABLE, ROOM, new Fate.CheckAgain(NOW.plusSeconds(60),
                        "rate limited: asked again at " + NOW.plusSeconds(60), new Fate.RateLimit(NOW.plusSeconds(60), false, false))));
        rows.add(row("a candidate's lookup answered 429: its own gate closes, not the provider's",
                new Evidence.LookupRateLimited("7"), CANDIDATE, ROOM, new Fate.CheckAgain(NOW.plusSeconds(7),
                        "canary candidate rate limited: asked again at " + NOW.plusSeconds(7),
                        new Fate.RateLimit(NOW.plusSeconds(7), true, true))));

        // A lease nobody will finish.
        rows.add(row("lease ended before sending: a new attempt now", new Evidence.LeaseEnded(false, false, "expired"), STABLE,
                ONE_UNPARSEABLE, retry(0, 0, null)));
        rows.add(row("lease ended after sending to a provider that deduplicates: a new attempt now, ambiguous",
                new Evidence.LeaseEnded(true, true, "expired"), STABLE, ROOM, retry(0, 0, AMBIGUOUS)));
        rows.add(row("lease ended after sending to one that does not: parked, looked up first",
                new Evidence.LeaseEnded(true, false, "expired"), STABLE, ROOM, new Fate.Park()));
        rows.add(row("lease ended before sending, no attempt left: fails now", new Evidence.LeaseEnded(false, false, "expired"),
                STABLE, USED, fail(EXHAUSTED, "3 of 3 attempts used; last: lease expired")));
        rows.add(row("lease ended before sending, lifetime over: fails now", new Evidence.LeaseEnded(false, false, "handed back"),
                STABLE, OVER, fail(EXPIRED, pastLifetime(0, OVER.expiresAt(), "lease handed back"))));
        rows.add(row("lease ended after sending, no attempt left: parked, its answer may still come",
                new Evidence.LeaseEnded(true, true, "expired"), STABLE, USED, new Fate.Park()));

        // A canary stopped while the job waited on its candidate's task.
        rows.add(row("rolled back with room: resubmitted now on the stable revision, the streak kept",
                new Evidence.RolledBack("c@1"), CANDIDATE, ONE_UNPARSEABLE, retry(0, 1, null)));
        rows.add(row("rolled back with every attempt used: exhausted now, not a retry that never comes",
                new Evidence.RolledBack("c@1"), CANDIDATE, USED, fail(EXHAUSTED, "3 of 3 attempts used; last: canary rolled back: c@1")));
        rows.add(row("rolled back at the lifetime's end: expired", new Evidence.RolledBack("c@1"), CANDIDATE, OVER,
                fail(EXPIRED, pastLifetime(0, OVER.expiresAt(), "canary rolled back: c@1"))));

        // A start.
        rows.add(row("a start with room", new Evidence.Starting(), STABLE, ROOM, new Fate.Start()));
        rows.add(row("a start with every attempt used", new Evidence.Starting(), STABLE, USED,
                fail(EXHAUSTED, "3 of 3 attempts used; last: none left to start")));
        rows.add(row("a start at the lifetime's end", new Evidence.Starting(), STABLE, OVER,
                fail(EXPIRED, pastLifetime(0, OVER.expiresAt(), "none left to start"))));
        rows.add(row("a start deferred by a closed gate: at its reopening, the streak kept",
                new Evidence.Deferred(NOW.plusSeconds(30), null, "gate closed"), STABLE, ONE_UNPARSEABLE, retry(30, 1, null)));
        rows.add(row("a start deferred by a re-validation that may pass later: its category shown",
                new Evidence.Deferred(NOW.plusSeconds(30), TRANSIENT, "source unavailable"), STABLE, ROOM, retry(30, 0, TRANSIENT)));
        rows.add(row("a start deferred past the lifetime: expired",
                new Evidence.Deferred(NOW.plusSeconds(30), null, "at its concurrency limit"), STABLE, LATE,
                fail(EXPIRED, pastLifetime(30, LATE.expiresAt(), "at its concurrency limit"))));

        // A dispatch the broker dead-lettered before any attempt started from it.
        rows.add(row("a dispatch dead-lettered the first time: it goes out again", new Evidence.DispatchDeadLettered(0), STABLE,
                ROOM, new Fate.Redispatch()));
        rows.add(row("a dispatch dead-lettered after one give-back: it goes out again", new Evidence.DispatchDeadLettered(1),
                STABLE, ROOM, new Fate.Redispatch()));
        rows.add(row("a dispatch dead-lettered after two give-backs: dead_lettered", new Evidence.DispatchDeadLettered(2),
                STABLE, ROOM, fail(ErrorCategory.DEAD_LETTERED, "the dispatch message was dead-lettered 3 times before any"
                        + " attempt started from it; the last is kept in jobs.dispatch.dead")));
        rows.add(row("a dispatch dead-lettered at the lifetime's end: expired, not sent out again",
                new Evidence.DispatchDeadLettered(0), STABLE, OVER, fail(EXPIRED, pastLifetime(0, OVER.expiresAt(),
                        "dispatch dead-lettered"))));
        return rows.stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("rows")
    void decides(Row row) {
        assertThat(Outcomes.decide(row.evidence(), row.role(), row.standing(), WAITS, NOW)).isEqualTo(row.expected());
    }

    /** The table covers every kind of evidence and every decision (a new kind without rows fails here). */
    @Test
    void theTableCoversEveryEvidenceAndEveryFate() {
        Set<String> evidence = rows().map(r -> r.evidence().getClass().getSimpleName()).collect(Collectors.toCollection(TreeSet::new));
        Set<String> fates = rows().map(r -> r.expected().getClass().getSimpleName()).collect(Collectors.toCollection(TreeSet::new));
        assertThat(evidence).isEqualTo(Arrays.stream(Evidence.class.getPermittedSubclasses()).map(Class::getSimpleName)
                .collect(Collectors.toCollection(TreeSet::new)));
        assertThat(fates).isEqualTo(Arrays.stream(Fate.class.getPermittedSubclasses()).map(Class::getSimpleName)
                .collect(Collectors.toCollection(TreeSet::new)));
        assertThat(rows().map(Row::role)).contains(STABLE, CANDIDATE);
    }

    /** The caps-and-lifetime rule is written in one place: the rulebook (its endings' words appear nowhere else). */
    @Test
    void theCapsAreWrittenInTheRulebookOnly() throws IOException {
        List<String> askers;
        try (Stream<Path> files = Files.walk(Path.of("src/main/java/io/jobgate"))) {
            askers = files.filter(f -> f.toString().endsWith(".java"))
                    .filter(f -> {
                        try {
                            String code = Files.readString(f);
                            return code.contains("attempts used; last: ") || code.contains("would pass the job's lifetime");
                        } catch (IOException e) {
                            throw new java.io.UncheckedIOException(e);
                        }
                    })
                    .map(f -> f.getFileName().toString()).toList();
        }
        assertThat(askers).containsExactly("Outcomes.java");
    }
}
