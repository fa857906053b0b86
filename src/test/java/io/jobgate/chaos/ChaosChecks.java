package io.jobgate.chaos;

import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.jobgate.support.ApiClient;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * The invariants of the design, checked on what a chaos run left in PostgreSQL, S3 and the clients'
 * book: each check names what it examined and every violation it found.
 */
public final class ChaosChecks {

    private static final ObjectMapper JSON = new ObjectMapper();

    /** One row of the table: a rule, how many things it looked at, what broke it. */
    public record Check(String rule, long examined, List<String> violations) {
    }

    /**
     * A call a slow provider answered, from its own log: the idempotency key of its job (the invoice number its
     * prompt carried), when the call arrived and when its answer left.
     */
    public record ProviderAnswer(String idempotencyKey, Instant arrived, Instant answered) {
    }

    /**
     * The share of each tenant's jobs that must succeed. The faults the runs inject fail a few per cent at most (the
     * bounds per category are tighter); a gateway that fails the jobs after an event stays far below.
     */
    static final double MOST_SUCCEED = 0.9;

    /** How close to a SIGKILL an answer may or may not have been read by the gateway that was killed. */
    static final Duration AROUND_A_KILL = Duration.ofSeconds(1);

    /** A job as the database ends it. */
    record Job(String id, String tenant, String status, String category, String finalizedAt, long cost, int attempts,
               String result, String idempotencyKey) {
    }

    private final Connection db;
    private final S3Client s3;
    private final String bucket;
    private final ApiClient api;
    private final Duration rateLimitBackoff;
    private final List<Check> checks = new ArrayList<>();

    public ChaosChecks(Connection db, S3Client s3, String bucket, ApiClient api, Duration rateLimitBackoff) {
        this.db = db;
        this.s3 = s3;
        this.bucket = bucket;
        this.api = api;
        this.rateLimitBackoff = rateLimitBackoff;
    }

    /**
     * A run without provider faults and without a slow provider (the failover test): the 429 checks have nothing to
     * examine there and are left out.
     *
     * @param explained the failures the run's faults explain, per tenant: category → at most how many (none: every
     *                  job must succeed)
     */
    public List<Check> run(ChaosLoad load, Map<String, Map<String, Long>> explained) throws Exception {
        return run(load, explained, false, null, List.of(), null);
    }

    /**
     * A run whose simulator answers some submits with 429 and one of whose tenants goes to a slow provider (the chaos
     * soak): the 429 checks and the slow provider's check must each examine something.
     *
     * @param explained    the failures the run's faults explain, per tenant: category → at most how many
     * @param answers      the calls a slow provider answered (its log)
     * @param gatewayKills when the gateway was killed (SIGKILL): the answers on their way then had nobody to read them
     */
    public List<Check> run(ChaosLoad load, Map<String, Map<String, Long>> explained, List<ProviderAnswer> answers,
                           List<Instant> gatewayKills) throws Exception {
        return run(load, explained, true, answers, gatewayKills, null);
    }

    /**
     * The chaos soak with a pool: as {@link #run(ChaosLoad, Map, List, List)}, and the pool's invariants on every job
     * that named it ({@link PoolInvariants}), each of which must examine something.
     *
     * @param pool the pool the run's pool jobs named, with its members' prices
     */
    public List<Check> run(ChaosLoad load, Map<String, Map<String, Long>> explained, List<ProviderAnswer> answers,
                           List<Instant> gatewayKills, PoolSpec pool) throws Exception {
        return run(load, explained, true, answers, gatewayKills, pool);
    }

    /**
     * A pool of the run: its name, each member's price per image (micro-units) as its provider file says, and which of
     * its members are pull members (docs/workers.md), whose tasks are checked as well ({@link #pullMember}).
     */
    public record PoolSpec(String name, Map<String, Long> imagePrices, List<String> pullMembers) {

        public PoolSpec(String name, Map<String, Long> imagePrices) {
            this(name, imagePrices, List.of());
        }
    }

    private List<Check> run(ChaosLoad load, Map<String, Map<String, Long>> explained, boolean rateLimitsInjected,
                            List<ProviderAnswer> answers, List<Instant> gatewayKills, PoolSpec pool) throws Exception {
        Map<String, Job> jobs = jobs();
        jobsSucceeded(jobs, explained);
        if (answers != null) {
            // Never skipped when the provider got no calls: that examines nothing, and fails.
            providerAnswersReachedTheirJobs(answers, gatewayKills, jobs);
        }
        List<ChaosLoad.Accepted> accepted = load.accepted();
        acceptedJobsKeptAndTerminal(accepted, jobs);
        oneFinalEventPerJob(jobs);
        ledgerPerJob(jobs);
        ledgerTotals(jobs);
        outputs(jobs, accepted);
        attemptsKept(jobs);
        if (rateLimitsInjected) {
            retryAfterHonoured();
            gateClosedForEveryJob();
        }
        readsNeverGoBack(load, jobs);
        if (pool != null) {
            poolJobs(pool);
            for (String member : pool.pullMembers()) {
                pullMember(member);
            }
        }
        nothingHeld();
        paidAnswersKept();
        check("clients never got a 404, a non-JSON body or another job for their key", load.answers().values().stream()
                .mapToLong(Long::longValue).sum(), load.violations());
        check("arrivals stayed on the clock through every event (each first POST within " + ChaosLoad.ON_TIME.toSeconds()
                + " s of its planned time: the load was open-loop)", load.submitted(), load.lateArrivals().entrySet().stream()
                .sorted(Map.Entry.comparingByKey()).map(e -> "arrival " + e.getKey() + " left " + e.getValue() + " ms late").toList());
        return checks;
    }

    /**
     * How many jobs out of {@code jobs} an injected fault that hits a job with probability {@code perJob} may fail:
     * three times the expected number, and two. A binomial count stays under it (five standard deviations and more
     * for the rates and sizes of these runs); a gateway failing jobs the faults do not explain goes over it.
     */
    public static long explained(double perJob, long jobs) {
        return (long) Math.ceil(3 * perJob * jobs) + 2;
    }

    /**
     * Jobs succeed. Every other check holds just as well when every job fails and is refunded; here a failure must be
     * one the run's injected faults explain (a category expected for its tenant, and no more of it than they can
     * cause), and each tenant's jobs succeed by a clear majority.
     */
    private void jobsSucceeded(Map<String, Job> jobs, Map<String, Map<String, Long>> explained) {
        Map<String, Long> total = new TreeMap<>();
        Map<String, Long> succeeded = new TreeMap<>();
        Map<String, Map<String, List<String>>> failed = new TreeMap<>();
        for (Job job : jobs.values()) {
            total.merge(job.tenant(), 1L, Long::sum);
            if (job.status().equals("succeeded")) {
                succeeded.merge(job.tenant(), 1L, Long::sum);
            } else {
                failed.computeIfAbsent(job.tenant(), t -> new TreeMap<>())
                        .computeIfAbsent(job.category() == null ? job.status() : job.category(), c -> new ArrayList<>()).add(job.id());
            }
        }
        List<String> wrong = new ArrayList<>();
        failed.forEach((tenant, byCategory) -> byCategory.forEach((category, ids) -> {
            long most = explained.getOrDefault(tenant, Map.of()).getOrDefault(category, 0L);
            if (ids.size() > most) {
                wrong.add("tenant " + tenant + ": " + ids.size() + " jobs failed " + category + ", the injected faults explain "
                        + most + " (e.g. " + ids.stream().sorted().limit(3).toList() + ")");
            }
        }));
        total.forEach((tenant, n) -> {
            long ok = succeeded.getOrDefault(tenant, 0L);
            if (ok < MOST_SUCCEED * n) {
                wrong.add("tenant " + tenant + ": " + ok + " of " + n + " jobs succeeded, fewer than "
                        + Math.round(MOST_SUCCEED * 100) + "%");
            }
        });
        check("jobs succeed: each failure one the injected faults explain (its category expected for its tenant, within "
                + "the count they can cause); at least " + Math.round(MOST_SUCCEED * 100) + "% of each tenant's jobs succeeded",
                jobs.size(), wrong);
    }

    private Map<String, Job> jobs() throws Exception {
        Map<String, Job> jobs = new HashMap<>();
        try (Statement s = db.createStatement(); ResultSet rs = s.executeQuery("""
                SELECT job_id::text, tenant_id, status, error_category, finalized_at, cost_micros, attempts, result::text,
                       idempotency_key FROM jobs""")) {
            while (rs.next()) {
                Timestamp finalized = rs.getTimestamp(5);
                jobs.put(rs.getString(1), new Job(rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4),
                        finalized == null ? null : finalized.toInstant().toString(), rs.getLong(6), rs.getInt(7),
                        rs.getString(8), rs.getString(9)));
            }
        }
        return jobs;
    }

    private void acceptedJobsKeptAndTerminal(List<ChaosLoad.Accepted> accepted, Map<String, Job> jobs) {
        List<String> wrong = new ArrayList<>();
        for (ChaosLoad.Accepted a : accepted) {
            Job job = jobs.get(a.jobId());
            if (job == null) {
                wrong.add("accepted job " + a.jobId() + " (" + a.idempotencyKey() + ") is not in the database");
            } else if (job.finalizedAt() == null) {
                wrong.add("job " + job.id() + " ended the run in " + job.status());
            } else if (!a.idempotencyKey().equals(job.idempotencyKey())) {
                wrong.add("job " + job.id() + " has key " + job.idempotencyKey() + ", answered for " + a.idempotencyKey());
            }
        }
        Set<String> answered = accepted.stream().map(ChaosLoad.Accepted::jobId).collect(Collectors.toSet());
        jobs.keySet().stream().filter(id -> !answered.contains(id))
                .forEach(id -> wrong.add("job " + id + " (" + jobs.get(id).idempotencyKey() + ") exists but no client was given it"));
        check("every accepted job kept and terminal; no job nobody was given", accepted.size(), wrong);
    }

    private void oneFinalEventPerJob(Map<String, Job> jobs) throws Exception {
        Map<String, Long> events = counts("""
                SELECT job_id::text, count(*) FROM outbox WHERE event_type = 'status'
                   AND payload->>'status' IN ('succeeded', 'failed', 'cancelled') GROUP BY job_id""");
        List<String> wrong = new ArrayList<>();
        jobs.values().forEach(job -> {
            long n = events.getOrDefault(job.id(), 0L);
            if (job.finalizedAt() != null && n != 1) {
                wrong.add("job " + job.id() + " has " + n + " final status events");
            }
        });
        check("exactly one final status event per terminal job", jobs.size(), wrong);
    }

    private void ledgerPerJob(Map<String, Job> jobs) throws Exception {
        Map<String, List<long[]>> entries = new HashMap<>();
        try (Statement s = db.createStatement(); ResultSet rs = s.executeQuery(
                "SELECT job_id::text, entry_type, amount_micros FROM ledger WHERE job_id IS NOT NULL")) {
            while (rs.next()) {
                entries.computeIfAbsent(rs.getString(1), k -> new ArrayList<>())
                        .add(new long[] {rs.getString(2).equals("debit") ? 0 : rs.getString(2).equals("refund") ? 1 : 2, rs.getLong(3)});
            }
        }
        List<String> wrong = new ArrayList<>();
        for (Job job : jobs.values()) {
            List<long[]> mine = entries.getOrDefault(job.id(), List.of());
            List<long[]> debits = mine.stream().filter(e -> e[0] == 0).toList();
            List<long[]> refunds = mine.stream().filter(e -> e[0] == 1).toList();
            boolean refundDue = job.status().equals("failed") || job.status().equals("cancelled");
            if (debits.size() != 1 || debits.get(0)[1] != -job.cost()) {
                wrong.add("job " + job.id() + ": debits " + debits.stream().map(e -> e[1]).toList() + " for cost " + job.cost());
            }
            if (refunds.size() != (refundDue ? 1 : 0) || (refundDue && refunds.get(0)[1] != job.cost())) {
                wrong.add("job " + job.id() + " " + job.status() + ": refunds " + refunds.stream().map(e -> e[1]).toList());
            }
            if (mine.stream().anyMatch(e -> e[0] == 2)) {
                wrong.add("job " + job.id() + " has ledger entries other than debit and refund");
            }
        }
        check("one debit per job; one refund per failed job, none otherwise", jobs.size(), wrong);
    }

    private void ledgerTotals(Map<String, Job> jobs) throws Exception {
        Map<String, Long> balances = counts("SELECT tenant_id, balance_micros FROM tenant_accounts");
        Map<String, Long> sums = counts("SELECT tenant_id, sum(amount_micros)::bigint FROM ledger GROUP BY tenant_id");
        Map<String, Long> grants = counts("SELECT tenant_id, sum(amount_micros)::bigint FROM ledger WHERE entry_type = 'grant' GROUP BY tenant_id");
        Map<String, Long> charged = new TreeMap<>();
        jobs.values().stream().filter(j -> j.status().equals("succeeded"))
                .forEach(j -> charged.merge(j.tenant(), j.cost(), Long::sum));
        List<String> wrong = new ArrayList<>();
        for (String tenant : balances.keySet()) {
            long balance = balances.get(tenant);
            if (balance != sums.getOrDefault(tenant, 0L)) {
                wrong.add(tenant + ": balance " + balance + " is not the ledger's sum " + sums.get(tenant));
            }
            long expected = grants.getOrDefault(tenant, 0L) - charged.getOrDefault(tenant, 0L);
            if (balance != expected) {
                wrong.add(tenant + ": balance " + balance + ", grants minus succeeded jobs' costs is " + expected);
            }
        }
        check("ledger totals: balance = ledger sum = grants - costs of succeeded jobs", balances.size(), wrong);
    }

    private void outputs(Map<String, Job> jobs, List<ChaosLoad.Accepted> accepted) throws Exception {
        Map<String, List<String>> promoted = new HashMap<>();
        long objects = 0;
        for (S3Object o : s3.listObjectsV2Paginator(r -> r.bucket(bucket).prefix("outputs/")).contents()) {
            objects++;
            String[] parts = o.key().split("/");
            promoted.computeIfAbsent(parts.length == 4 ? parts[2] : o.key(), k -> new ArrayList<>()).add(parts[parts.length - 1]);
        }
        List<String> wrong = new ArrayList<>();
        for (Job job : jobs.values()) {
            List<String> mine = promoted.remove(job.id());
            List<String> names = mine == null ? List.of() : mine.stream().sorted().toList();
            if (job.status().equals("succeeded")) {
                JsonNode record = job.result() == null ? null : JSON.readTree(job.result());
                String key = record == null ? "" : record.path("output_key").asText();
                String file = key.substring(key.lastIndexOf('/') + 1);
                if (!key.startsWith("outputs/" + job.tenant() + "/" + job.id() + "/")
                        || !names.equals(List.of("manifest.json", file).stream().sorted().toList())) {
                    wrong.add("succeeded job " + job.id() + ": result " + key + ", promoted " + names);
                }
            } else if (!names.isEmpty()) {
                wrong.add(job.status() + " job " + job.id() + " has promoted objects " + names);
            }
        }
        promoted.forEach((owner, names) -> wrong.add("orphan in the readable area: " + owner + " " + names));
        check("one promoted output (+ manifest) per succeeded job, none for others, no orphan", objects, wrong);

        // Read back through the API, as a client would: a sample of each kind of end.
        Map<String, String> apiKeyOf = accepted.stream().collect(Collectors.toMap(ChaosLoad.Accepted::jobId,
                ChaosLoad.Accepted::apiKey, (a, b) -> a));
        List<String> unreadable = new ArrayList<>();
        int read = 0;
        int succeeded = 0;
        int other = 0;
        for (Job job : jobs.values()) {
            String apiKey = apiKeyOf.get(job.id());
            if (apiKey == null) {
                continue;
            }
            if (job.status().equals("succeeded") && succeeded++ < 60) {
                byte[] bytes = api.getBytes(apiKey, "/v1/jobs/" + job.id() + "/output");
                String sha = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
                if (!sha.equals(JSON.readTree(job.result()).path("sha256").asText())) {
                    unreadable.add("job " + job.id() + ": the output read has digest " + sha);
                }
                read++;
            } else if (!job.status().equals("succeeded") && other++ < 40) {
                int status = api.get(apiKey, "/v1/jobs/" + job.id() + "/output").status();
                if (status != 409) {
                    unreadable.add(job.status() + " job " + job.id() + ": output answered " + status);
                }
                read++;
            }
        }
        check("outputs read through the API: the recorded digest; 409 for jobs that did not succeed", read, unreadable);
    }

    private void attemptsKept(Map<String, Job> jobs) throws Exception {
        Map<String, List<Integer>> numbers = new HashMap<>();
        List<String> wrong = new ArrayList<>();
        long examined = 0;
        try (Statement s = db.createStatement(); ResultSet rs = s.executeQuery(
                "SELECT a.job_id::text, a.attempt, a.ended_at IS NULL, a.outcome, j.status, a.worker FROM attempts a"
                        + " JOIN jobs j USING (job_id) ORDER BY a.job_id, a.attempt")) {
            while (rs.next()) {
                examined++;
                numbers.computeIfAbsent(rs.getString(1), k -> new ArrayList<>()).add(rs.getInt(2));
                if (rs.getBoolean(3) || rs.getString(4) == null) {
                    wrong.add("attempt " + rs.getInt(2) + " of job " + rs.getString(1) + " (now " + rs.getString(5) + ") by "
                            + rs.getString(6) + " was never closed");
                }
            }
        }
        for (Job job : jobs.values()) {
            List<Integer> mine = numbers.getOrDefault(job.id(), List.of());
            for (int i = 0; i < mine.size(); i++) {
                if (mine.get(i) != i + 1) {
                    wrong.add("job " + job.id() + " attempts " + mine);
                    break;
                }
            }
            if (mine.size() != job.attempts()) {
                wrong.add("job " + job.id() + " counts " + job.attempts() + " attempts, " + mine.size() + " kept");
            }
        }
        check("every attempt kept (numbered 1..n, n = the job's count) and closed", examined, wrong);
    }

    /**
     * After a 429, the job's next attempt started no sooner than the Retry-After said (seconds after
     * the answer, or an HTTP date), than the provider's rate-limit back-off when the header could not
     * be read, and than the due time the attempt recorded (the back-off, when there was no header).
     */
    private void retryAfterHonoured() throws Exception {
        List<String> wrong = new ArrayList<>();
        long examined = 0;
        try (Statement s = db.createStatement(); ResultSet rs = s.executeQuery("""
                SELECT a.job_id::text, a.attempt, a.ended_at, a.retry_after, a.retry_after_understood, a.next_attempt_at,
                       n.started_at, a.started_at + make_interval(secs => coalesce(a.duration_ms, 0) / 1000.0) AS answered,
                       n.adapter <> a.adapter AS moved
                  FROM attempts a JOIN attempts n ON n.job_id = a.job_id AND n.attempt = a.attempt + 1
                 WHERE a.http_status = 429""")) {
            while (rs.next()) {
                examined++;
                Instant ended = rs.getTimestamp(3).toInstant();
                String header = rs.getString(4);
                Object understood = rs.getObject(5);
                Timestamp recorded = rs.getTimestamp(6);
                Instant next = rs.getTimestamp(7).toInstant();
                // The header's seconds count from the answer: the attempt's start plus its call's duration
                // (never later than the gateway read it). Its end is recorded later, by a load-dependent delay.
                Instant answered = rs.getTimestamp(8).toInstant();
                Instant due = recorded == null ? ended : recorded.toInstant();
                // A pool job that moved after the 429: the Retry-After closed the failed member's gate, not the other
                // member's; its next attempt there is due when the attempt recorded (its back-off).
                boolean moved = rs.getBoolean(9);
                if (moved) {
                    header = null;
                    understood = null;
                }
                if (header != null && Boolean.TRUE.equals(understood)) {
                    Instant said = header.chars().allMatch(Character::isDigit) ? answered.plusSeconds(Long.parseLong(header))
                            : ZonedDateTime.parse(header, DateTimeFormatter.RFC_1123_DATE_TIME).toInstant();
                    due = max(due, said);
                } else if (header != null) {
                    due = max(due, answered.plus(rateLimitBackoff));
                }
                if (next.isBefore(due)) {
                    wrong.add("job " + rs.getString(1) + " attempt " + (rs.getInt(2) + 1) + " at " + next + ", the 429's "
                            + (header == null ? "back-off" : "Retry-After '" + header + "'") + " said " + due);
                }
            }
        }
        check("no retry before its Retry-After (the back-off without one, the provider's rate-limit back-off if unreadable;"
                        + " a pool job that moved: before the due time its attempt recorded)",
                examined, wrong);
    }

    /**
     * A 429 closes the provider's gate for every job until its Retry-After: no attempt of any job
     * leased after the 429 was recorded starts before then (200 ms either side for leases in flight).
     */
    private void gateClosedForEveryJob() throws Exception {
        List<String> wrong = new ArrayList<>();
        long examined = 0;
        try (Statement s = db.createStatement(); ResultSet rs = s.executeQuery("""
                SELECT a.job_id::text, a.ended_at, a.next_attempt_at, o.job_id::text, o.attempt, o.started_at
                  FROM attempts a JOIN attempts o ON o.adapter = a.adapter
                   AND o.started_at > a.ended_at + interval '200 milliseconds'
                   AND o.started_at < a.next_attempt_at - interval '200 milliseconds'
                 WHERE a.http_status = 429 AND a.retry_after_understood""")) {
            while (rs.next()) {
                wrong.add("job " + rs.getString(4) + " attempt " + rs.getInt(5) + " started at " + rs.getTimestamp(6).toInstant()
                        + " while a 429 for job " + rs.getString(1) + " closed the gate until " + rs.getTimestamp(3).toInstant());
            }
        }
        try (Statement s = db.createStatement(); ResultSet rs = s.executeQuery(
                "SELECT count(*) FROM attempts WHERE http_status = 429 AND retry_after_understood")) {
            rs.next();
            examined = rs.getLong(1);
        }
        check("a 429 closes the provider's gate for every job until its Retry-After", examined, wrong);
    }

    private static Instant max(Instant a, Instant b) {
        return a.isAfter(b) ? a : b;
    }

    private void readsNeverGoBack(ChaosLoad load, Map<String, Job> jobs) {
        List<String> wrong = new ArrayList<>();
        Map<String, ChaosLoad.Read> reads = load.firstTerminalReads();
        reads.forEach((id, read) -> {
            Job job = jobs.get(id);
            if (job == null || !job.status().equals(read.status()) || !Instant.parse(read.finalizedAt()).toString().equals(job.finalizedAt())) {
                wrong.add("job " + id + " read as " + read + ", ended " + (job == null ? "missing" : job.status() + " " + job.finalizedAt()));
            }
        });
        check("a terminal state once read never changes", reads.size(), wrong);
    }

    /**
     * The pool's invariants ({@link PoolInvariants}) on every job that named {@code pool}: never two renders (no attempt
     * that may have rendered on one member followed by one on another), its {@code provider} the member of its last
     * attempt, a succeeded one debited once at the dearest member's price. The invariants every job is held to (one
     * final event, one debit, a refund per failed job, nothing lost) are checked above for pool jobs as for the rest;
     * the last row says how many of the jobs they examined named the pool, and fails when none did.
     */
    private void poolJobs(PoolSpec pool) throws Exception {
        Map<String, PoolInvariants.PoolJob> poolJobs = new TreeMap<>();
        try (var q = db.prepareStatement("SELECT job_id::text, pool, provider, status, cost_micros FROM jobs WHERE pool = ?")) {
            q.setString(1, pool.name());
            try (ResultSet rs = q.executeQuery()) {
                while (rs.next()) {
                    poolJobs.put(rs.getString(1), new PoolInvariants.PoolJob(rs.getString(1), rs.getString(2), rs.getString(3),
                            rs.getString(4), rs.getLong(5)));
                }
            }
        }
        Map<String, List<PoolInvariants.Attempt>> attempts = new HashMap<>();
        long attemptRows = 0;
        try (var q = db.prepareStatement("""
                SELECT a.job_id::text, a.attempt, a.adapter, a.outcome, a.error_category
                  FROM attempts a JOIN jobs j USING (job_id) WHERE j.pool = ? ORDER BY a.job_id, a.attempt""")) {
            q.setString(1, pool.name());
            try (ResultSet rs = q.executeQuery()) {
                while (rs.next()) {
                    attemptRows++;
                    attempts.computeIfAbsent(rs.getString(1), k -> new ArrayList<>()).add(new PoolInvariants.Attempt(rs.getInt(2),
                            rs.getString(3), rs.getString(4), rs.getString(5)));
                }
            }
        }
        Map<String, List<PoolInvariants.Entry>> ledger = new HashMap<>();
        try (var q = db.prepareStatement("""
                SELECT l.job_id::text, l.entry_type, l.amount_micros, l.units FROM ledger l JOIN jobs j USING (job_id)
                 WHERE j.pool = ?""")) {
            q.setString(1, pool.name());
            try (ResultSet rs = q.executeQuery()) {
                while (rs.next()) {
                    java.math.BigDecimal units = rs.getBigDecimal(4);
                    ledger.computeIfAbsent(rs.getString(1), k -> new ArrayList<>()).add(new PoolInvariants.Entry(rs.getString(2),
                            rs.getLong(3), units == null ? null : units.longValueExact()));
                }
            }
        }
        List<String> twoRenders = new ArrayList<>();
        long mayHaveRendered = 0;
        List<String> provider = new ArrayList<>();
        long withAttempts = 0;
        List<String> money = new ArrayList<>();
        long succeeded = 0;
        for (PoolInvariants.PoolJob job : poolJobs.values()) {
            List<PoolInvariants.Attempt> mine = attempts.getOrDefault(job.id(), List.of());
            mayHaveRendered += mine.stream().filter(PoolInvariants.Attempt::mayHaveRendered).count();
            twoRenders.addAll(PoolInvariants.neverTwoRenders(job.id(), mine));
            if (!mine.isEmpty()) {
                withAttempts++;
            }
            provider.addAll(PoolInvariants.providerIsLastAttemptsMember(job, mine));
            if (job.status().equals("succeeded")) {
                succeeded++;
            }
            money.addAll(PoolInvariants.chargedOnceAtTheDearest(job, ledger.getOrDefault(job.id(), List.of()), pool.imagePrices()));
        }
        check("pool " + pool.name() + ": never two renders (no attempt that may have rendered on one member, "
                + "submission_unknown or ambiguous, followed by an attempt on another; examined: such attempts)", mayHaveRendered, twoRenders);
        check("pool " + pool.name() + ": a job's provider is the member of its last attempt", withAttempts, provider);
        check("pool " + pool.name() + ": a succeeded job debited once, at the dearest member's price " + pool.imagePrices()
                + " fixed at admission", succeeded, money);
        check("pool " + pool.name() + ": its jobs held to every invariant above (" + attemptRows + " attempts)", poolJobs.size(), List.of());
    }

    /**
     * A pull member's tasks (docs/workers.md). One task carries one attempt and ends once, so a task leased by several
     * workers (a lease ran out, the next worker took it) is still one render: what must hold is that no task of a final
     * job is still open (waiting or leased: a worker could still render it, or its output be promoted), that no job has
     * two succeeded tasks, that a job the member rendered (a succeeded task) did not succeed on another member, and that
     * a job that succeeded on the member did so on exactly one succeeded task, of its last attempt.
     */
    private void pullMember(String member) throws Exception {
        List<String> open = new ArrayList<>();
        long tasks = 0;
        try (var q = db.prepareStatement("""
                SELECT t.task_id::text, t.job_id::text, t.attempt, t.status, t.leases, j.status
                  FROM worker_tasks t JOIN jobs j USING (job_id) WHERE t.provider = ? AND j.finalized_at IS NOT NULL""")) {
            q.setString(1, member);
            try (ResultSet rs = q.executeQuery()) {
                while (rs.next()) {
                    tasks++;
                    if (rs.getString(4).equals("waiting") || rs.getString(4).equals("leased")) {
                        open.add("task " + rs.getString(1) + " (job " + rs.getString(2) + " attempt " + rs.getInt(3) + ", "
                                + rs.getInt(5) + " leases) is " + rs.getString(4) + ", its job ended " + rs.getString(6));
                    }
                }
            }
        }
        check("pull member " + member + ": no task of a final job still open (waiting or leased)", tasks, open);

        List<String> once = new ArrayList<>();
        long jobs = 0;
        try (var q = db.prepareStatement("""
                SELECT j.job_id::text, j.status, j.provider, j.attempts,
                       count(*) FILTER (WHERE t.status = 'succeeded'), max(t.attempt) FILTER (WHERE t.status = 'succeeded'),
                       sum(t.leases)
                  FROM jobs j JOIN worker_tasks t USING (job_id) WHERE t.provider = ? GROUP BY j.job_id""")) {
            q.setString(1, member);
            try (ResultSet rs = q.executeQuery()) {
                while (rs.next()) {
                    jobs++;
                    String job = "job " + rs.getString(1) + " (" + rs.getString(2) + " on " + rs.getString(3) + ", "
                            + rs.getInt(4) + " attempts, " + rs.getLong(7) + " leases of its tasks)";
                    long succeededTasks = rs.getLong(5);
                    boolean succeededHere = rs.getString(2).equals("succeeded") && member.equals(rs.getString(3));
                    if (succeededTasks > 1) {
                        once.add(job + " has " + succeededTasks + " succeeded tasks");
                    } else if (succeededHere && (succeededTasks != 1 || rs.getInt(6) != rs.getInt(4))) {
                        once.add(job + " has " + succeededTasks + " succeeded tasks, of attempt " + rs.getObject(6));
                    } else if (rs.getString(2).equals("succeeded") && !succeededHere && succeededTasks > 0) {
                        once.add(job + " was rendered by a worker of " + member + " (attempt " + rs.getInt(6) + ") as well");
                    }
                }
            }
        }
        check("pull member " + member + ": one render per job however often its task was leased (at most one succeeded task; "
                + "a job that succeeded on the member on exactly one, of its last attempt; none for a job that succeeded elsewhere)",
                jobs, once);
    }

    /**
     * Every job terminal, so nothing may still be held: no tenant's running slot or open job or queued
     * bytes, no in-flight count of the gateway, no dispatch window slot (sums over the release shards; the tenants'
     * counters as tenant_counters sums them, V24),
     * no provider slot (a call in flight), no provider's share of the dispatch window (V30).
     */
    private void nothingHeld() throws Exception {
        Map<String, Long> held = counts("""
                SELECT 'tenant ' || tenant_id || ' running/open/queued bytes', running_jobs + open_jobs + queued_bytes
                  FROM tenant_counters WHERE running_jobs <> 0 OR open_jobs <> 0 OR queued_bytes <> 0
                UNION ALL SELECT 'gateway in flight', sum(in_flight)::bigint FROM gateway_capacity HAVING sum(in_flight) <> 0
                UNION ALL SELECT 'dispatch window', sum(running)::bigint FROM dispatch_window HAVING sum(running) <> 0
                UNION ALL SELECT 'leases', count(*) FROM jobs WHERE lease_token IS NOT NULL HAVING count(*) > 0
                UNION ALL SELECT 'provider ' || provider || ' slots (calls in flight)', count(*) FROM provider_slots
                           WHERE lease_token IS NOT NULL GROUP BY provider
                UNION ALL SELECT 'provider ' || provider || ' share of the dispatch window (V30)', sum(running)::bigint
                            FROM provider_window GROUP BY provider HAVING sum(running) <> 0""");
        check("nothing held once every job is terminal: slots, reservations, leases, provider calls, providers' windows", 6,
                held.entrySet().stream().map(e -> e.getKey() + " = " + e.getValue()).toList());
    }

    /**
     * Issue 35: an answer the provider gave (2xx: made, and billed) is never thrown away. Its attempt
     * either carried the job on, or, when its lease had run out, finalized the job as a late answer or
     * was recorded as one (outcomes late_*); "lease_lost" with a 2xx status is an answer dropped.
     */
    private void paidAnswersKept() throws Exception {
        List<String> wrong = new ArrayList<>();
        long examined;
        try (Statement s = db.createStatement()) {
            try (ResultSet rs = s.executeQuery("SELECT count(*) FROM attempts WHERE http_status BETWEEN 200 AND 299")) {
                rs.next();
                examined = rs.getLong(1);
            }
            try (ResultSet rs = s.executeQuery("SELECT job_id, attempt, http_status FROM attempts "
                    + "WHERE http_status BETWEEN 200 AND 299 AND outcome = 'lease_lost' ORDER BY job_id, attempt")) {
                while (rs.next()) {
                    wrong.add("job " + rs.getString(1) + " attempt " + rs.getInt(2) + ": HTTP " + rs.getInt(3) + " dropped as lease_lost");
                }
            }
        }
        check("no answered call thrown away (2xx never ends as lease_lost)", examined, wrong);
    }

    /**
     * Issue 35, counted from the provider's side: each answer a slow provider gave to a gateway alive to read it
     * reached its job: the job succeeded, or its attempt recorded the answer (HTTP 200; a late answer keeps
     * its billed units there). Calls logged from {@link #AROUND_A_KILL} before a SIGKILL to that long after
     * their answer may or may not have been read and are left out; those a killed gateway had made found a
     * closed connection.
     */
    private void providerAnswersReachedTheirJobs(List<ProviderAnswer> answers, List<Instant> gatewayKills, Map<String, Job> jobs)
            throws Exception {
        Map<String, Job> byKey = new HashMap<>();
        jobs.values().forEach(j -> byKey.put(j.idempotencyKey(), j));
        Set<String> answeredAttempts = new java.util.HashSet<>();
        try (Statement s = db.createStatement(); ResultSet rs = s.executeQuery(
                "SELECT DISTINCT job_id::text FROM attempts WHERE http_status = 200")) {
            while (rs.next()) {
                answeredAttempts.add(rs.getString(1));
            }
        }
        List<String> wrong = new ArrayList<>();
        long read = 0;
        for (ProviderAnswer answer : answers) {
            // The stand-in logs a call a little after it was sent: one logged just after a SIGKILL was the dead gateway's.
            boolean cut = gatewayKills.stream().anyMatch(kill -> !kill.isBefore(answer.arrived().minus(AROUND_A_KILL))
                    && !kill.isAfter(answer.answered().plus(AROUND_A_KILL)));
            if (cut) {
                continue;
            }
            read++;
            Job job = byKey.get(answer.idempotencyKey());
            if (job == null) {
                wrong.add("the provider answered a call for " + answer.idempotencyKey() + " at " + answer.answered()
                        + ", a job nobody was given");
            } else if (!job.status().equals("succeeded") && !answeredAttempts.contains(job.id())) {
                wrong.add("the provider answered job " + job.id() + " (" + answer.idempotencyKey() + ") at " + answer.answered()
                        + "; the job ended " + job.status() + " " + job.category() + " with no attempt holding the answer");
            }
        }
        check("every answer a slow provider gave a living gateway reached its job (" + answers.size() + " answered, "
                + (answers.size() - read) + " around a SIGKILL left out)", read, wrong);
    }

    private Map<String, Long> counts(String sql) throws Exception {
        Map<String, Long> values = new LinkedHashMap<>();
        try (Statement s = db.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            while (rs.next()) {
                values.put(rs.getString(1), rs.getLong(2));
            }
        }
        return values;
    }

    /**
     * A check that examined nothing is violated: it would hold whatever the gateway did (fault injection broken, no
     * 429 to check the Retry-After of, a slow provider nobody called).
     */
    private void check(String rule, long examined, List<String> violations) {
        List<String> all = new ArrayList<>(violations);
        if (examined <= 0) {
            all.add(0, "examined nothing: the run gave this check nothing to hold against");
        }
        checks.add(new Check(rule, examined, List.copyOf(all)));
    }
}
