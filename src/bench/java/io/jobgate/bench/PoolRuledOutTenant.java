package io.jobgate.bench;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * {@code bench --only pool}, a tenant whose rules exclude a member: its entry says {@code providers: {deny: [simulator]}}
 * (docs/providers.md, "Tenant rules"), and it sends pool jobs at 1 job/s through every phase. It can only wait on openai
 * while openai is out, and its jobs must say why ({@code waiting_reason} on {@code GET /v1/jobs/{id}}); none may ever
 * run on the simulator. At the end the jobs still behind openai's one-hour gate are cancelled through the tenant API and
 * each must be refunded. Its id is outside the run's tenant pattern: the pool's tables and money checks leave it out.
 */
final class PoolRuledOutTenant {

    static final String NAME = "pool-no-simulator";
    static final String RULES = "providers: {deny: [simulator]}";

    private static final ObjectMapper JSON = io.jobgate.common.Json.MAPPER;

    /** Phases at least this long hold its jobs of the phases before the 429 to "none failed". */
    static final int MIN_PHASE_SECONDS_FOR_NO_FAILURE = 30;

    private final GatewayProcesses parties;
    private final String key;
    private final String tenantId;
    private final String body;
    private final int phases;
    /** Job ids by the phase they arrived in. */
    private final List<List<String>> jobs = new ArrayList<>();
    /** Per phase, at its end: its jobs waiting (queued, retry_wait) with a reason, and open ones without one. */
    private final long[] waitingWithReason;
    private final long[] openWithoutReason;
    /** Per phase, openai's state in the pool at its end (PoolBench's timeline column): whether its gate was closed. */
    private final String[] openaiAtEnd;
    private volatile String exampleReason;
    private volatile String exampleWithoutReason;
    private volatile String failure;
    /** The length of a phase, as run: long phases leave room for openai's cooldowns and probes. */
    private volatile int phaseSeconds;

    /** Declares the tenant (before the gateway starts: it reads the tenants file then). */
    PoolRuledOutTenant(GatewayProcesses parties, String body, int phases) {
        this.parties = parties;
        this.key = parties.ownTenant(NAME, RULES);
        this.tenantId = parties.ownTenantId(NAME);
        this.body = body;
        this.phases = phases;
        this.waitingWithReason = new long[phases];
        this.openWithoutReason = new long[phases];
        this.openaiAtEnd = new String[phases];
        for (int p = 0; p < phases; p++) {
            jobs.add(new ArrayList<>());
        }
    }

    /**
     * One job a second from {@code start} through every phase; at each phase's end, what its jobs of that phase show
     * (read then, not at the run's end: the jobs of the 429 phases are cancelled at the end, those of the 503 phase
     * have finished by then).
     */
    void run(long start, int phaseSeconds) {
        this.phaseSeconds = phaseSeconds;
        try (Connection db = java.sql.DriverManager.getConnection(parties.jdbcUrl())) {
            for (int phase = 0; phase < phases; phase++) {
                long from = start + phase * phaseSeconds * 1000L;
                for (int s = 0; s < phaseSeconds; s++) {
                    long wait = from + s * 1000L + 500 - System.currentTimeMillis();
                    if (wait > 0) {
                        Thread.sleep(wait); // half a second into each second: clear of the phase's fault switch
                    }
                    jobs.get(phase).add(send());
                }
                long rest = from + phaseSeconds * 1000L - System.currentTimeMillis();
                if (rest > 0) {
                    Thread.sleep(rest);
                }
                openaiAtEnd[phase] = PoolBench.memberState(db);
                readWaiting(phase);
            }
        } catch (InterruptedException stopped) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            failure = e.toString();
        }
    }

    private String send() throws Exception {
        HttpRequest post = parties.jobPost(body).header("Authorization", "Bearer " + key).header("Idempotency-Key", UUID.randomUUID().toString())
                .header("Content-Type", "application/json").build();
        HttpResponse<String> r = parties.http.send(post, HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 202) {
            throw new IllegalStateException("a job of " + tenantId + " was refused: " + r.statusCode() + " " + r.body());
        }
        return JSON.readTree(r.body()).path("job_id").asText();
    }

    private void readWaiting(int phase) throws Exception {
        for (String id : jobs.get(phase)) {
            JsonNode job = job(id);
            if (job.path("finalized_at").isTextual()) {
                continue;
            }
            if (waitsWithReason(job)) {
                waitingWithReason[phase]++;
                exampleReason = job.path("waiting_reason").asText();
            } else {
                openWithoutReason[phase]++; // in flight, or a retry after a backoff (nothing to wait for but the time)
                exampleWithoutReason = job.path("status").asText() + ", next_attempt_at " + job.path("next_attempt_at").asText();
            }
        }
    }

    private static boolean waitsWithReason(JsonNode job) {
        String status = job.path("status").asText();
        return (status.equals("queued") || status.equals("retry_wait")) && job.path("waiting_reason").isTextual();
    }

    private JsonNode job(String id) throws Exception {
        HttpResponse<String> r = parties.http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + parties.port + "/v1/jobs/" + id))
                .timeout(Duration.ofSeconds(30)).header("Authorization", "Bearer " + key).build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
            throw new IllegalStateException("GET /v1/jobs/" + id + ": " + r.statusCode() + " " + r.body());
        }
        return JSON.readTree(r.body());
    }

    /**
     * After the other tenants' jobs ended: prints per phase what became of its jobs, cancels those still waiting (each
     * must show its reason first) and checks their refunds; throws when one ran on the simulator, one of a phase before
     * the 429 failed (phases of {@value #MIN_PHASE_SECONDS_FOR_NO_FAILURE} s or more), one waiting had no
     * reason, a 429 phase whose end found openai's gate closed showed none of its open jobs waiting with a reason, none
     * waited with a reason in the whole run, or a cancel was not refunded.
     */
    void finish(Connection db, String[] phaseNames, int firstGatedPhase) throws Exception {
        if (failure != null) {
            throw new IllegalStateException(tenantId + "'s jobs could not be sent or read: " + failure);
        }
        List<String> broken = new ArrayList<>();
        System.out.printf("%n  tenant %s (%s), 1 job/s through every phase, not in the figures above:%n"
                + "  phase                              jobs  succeeded on openai  failed  waiting with a reason at the phase's end  open without one"
                + "  openai at the phase's end%n",
                tenantId, RULES);
        for (int phase = 0; phase < phases; phase++) {
            Map<String, Long> byStatus = statuses(db, jobs.get(phase));
            System.out.printf("  %-32s %6d  %19d  %6d  %40d  %16d  %s%n", phaseNames[phase], jobs.get(phase).size(),
                    byStatus.getOrDefault("succeeded on openai", 0L), byStatus.getOrDefault("failed", 0L), waitingWithReason[phase],
                    openWithoutReason[phase], openaiAtEnd[phase]);
            // Before the 429 its jobs wait on openai through the 503 and run once it is healthy again (a probe that
            // succeeds wakes them): none may fail. Phases shorter than a probe's cycle leave that to chance (CI's short run).
            if (phase < firstGatedPhase && phaseSeconds >= MIN_PHASE_SECONDS_FOR_NO_FAILURE && byStatus.getOrDefault("failed", 0L) > 0) {
                broken.add(byStatus.get("failed") + " of its jobs of phase " + (phase + 1) + " failed, though openai was healthy again before its 429");
            }
            if (byStatus.getOrDefault("succeeded elsewhere", 0L) > 0) {
                broken.add(byStatus.get("succeeded elsewhere") + " of its jobs of phase " + (phase + 1) + " succeeded on another member than openai");
            }
            // Behind the 429's gate its jobs can only wait on openai, and must say so. (With short phases openai may
            // still be cooling from the 503 then: no call met the 429, its jobs wait for the cooldown instead.)
            boolean gated = openaiAtEnd[phase].startsWith("gate closed");
            if (phase >= firstGatedPhase && gated && waitingWithReason[phase] + openWithoutReason[phase] > 0 && waitingWithReason[phase] == 0) {
                broken.add("none of its open jobs of phase " + (phase + 1) + " waited with a reason behind openai's 429");
            }
        }
        System.out.printf("  e.g. waiting_reason: %s%n", exampleReason == null ? "(none seen)" : "\"" + exampleReason + "\"");
        if (exampleWithoutReason != null) {
            System.out.printf("  e.g. open without one: %s%n", exampleWithoutReason);
        }
        if (exampleReason == null) {
            broken.add("none of its jobs was seen waiting with a reason while openai was out");
        }
        List<String> cancelled = cancelWaiting(broken);
        long refunded = refunded(db, cancelled);
        long onSimulator = attemptsOnSimulator(db);
        System.out.printf("  cancelled %d still waiting behind openai's gate (each with its reason), refunded %d; attempts on the simulator: %d%n",
                cancelled.size(), refunded, onSimulator);
        if (refunded != cancelled.size()) {
            broken.add((cancelled.size() - refunded) + " cancelled jobs were not refunded once");
        }
        if (onSimulator > 0) {
            broken.add(onSimulator + " attempts on the simulator, which its rules deny");
        }
        if (!broken.isEmpty()) {
            // A member the tenant's rules exclude used anyway, or a wait that does not say why: the run fails.
            throw new IllegalStateException("the pool run broke a promise to " + tenantId + ": " + String.join("; ", broken));
        }
    }

    /** Its jobs of one phase now: succeeded on openai, succeeded elsewhere, failed, open. */
    private Map<String, Long> statuses(Connection db, List<String> ids) throws Exception {
        Map<String, Long> byStatus = new java.util.HashMap<>();
        try (PreparedStatement s = db.prepareStatement("""
                SELECT CASE WHEN status = 'succeeded' AND provider = 'openai' THEN 'succeeded on openai'
                            WHEN status = 'succeeded' THEN 'succeeded elsewhere'
                            WHEN finalized_at IS NULL THEN 'open' ELSE status END, count(*)
                  FROM jobs WHERE job_id = ANY (?) GROUP BY 1""")) {
            s.setArray(1, db.createArrayOf("uuid", ids.toArray()));
            try (ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    byStatus.put(rs.getString(1), rs.getLong(2));
                }
            }
        }
        return byStatus;
    }

    /** Cancels, through the tenant API, its jobs still open; each must wait with its reason when it is. */
    private List<String> cancelWaiting(List<String> broken) throws Exception {
        List<String> cancelled = new ArrayList<>();
        for (List<String> phase : jobs) {
            for (String id : phase) {
                JsonNode job = job(id);
                if (job.path("finalized_at").isTextual()) {
                    continue;
                }
                if (!waitsWithReason(job)) {
                    broken.add(id + " open as " + job.path("status").asText() + " without a waiting_reason");
                }
                HttpResponse<String> r = parties.http.send(HttpRequest.newBuilder(
                                URI.create("http://127.0.0.1:" + parties.port + "/v1/jobs/" + id + "/cancel"))
                        .timeout(Duration.ofSeconds(30)).header("Authorization", "Bearer " + key)
                        .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() != 200) {
                    broken.add("cancel of " + id + ": " + r.statusCode() + " " + r.body());
                } else {
                    cancelled.add(id);
                }
            }
        }
        return cancelled;
    }

    /** The cancelled jobs with exactly one refund each in the ledger. */
    private static long refunded(Connection db, List<String> ids) throws Exception {
        try (PreparedStatement s = db.prepareStatement("""
                SELECT count(*) FROM (SELECT l.job_id FROM ledger l WHERE l.job_id = ANY (?) AND l.entry_type = 'refund'
                                       GROUP BY l.job_id HAVING count(*) = 1) once""")) {
            s.setArray(1, db.createArrayOf("uuid", ids.toArray()));
            try (ResultSet rs = s.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    private long attemptsOnSimulator(Connection db) throws Exception {
        try (PreparedStatement s = db.prepareStatement("""
                SELECT count(*) FROM attempts a JOIN jobs j ON j.job_id = a.job_id WHERE j.tenant_id = ? AND a.adapter = 'simulator'""")) {
            s.setString(1, tenantId);
            try (ResultSet rs = s.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }
}
