package io.jobgate.bench;

import java.io.IOException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * {@code bench --only pool}, a submit whose reply is lost: pool jobs of this run's tenants sent during the first phase
 * with {@code X-Correlation-Id: sim-fault-lose_reply-…}, which the bundled simulator answers by accepting the task and
 * dropping the reply (docs/providers.md, "The provider simulator"; the stand-in of openai ignores it). Those placed on
 * the simulator must be settled there by lookup, never resubmitted to openai (docs/providers.md, "Never two renders"):
 * each succeeded once, every attempt on the simulator, one of them {@code submission_unknown}, and the gateway's log
 * shows the poller's lookup resolving it.
 */
final class PoolLostReplies {

    /** The correlation ids of this case: the simulator's per-job fault. */
    static final String CORRELATION_PREFIX = "sim-fault-lose_reply-";

    /** More than these sent after the planned ones, one at a time, until one is placed on the simulator. */
    private static final int MOST_EXTRA = 20;

    /** The poller's lookup that resolved a job's ambiguous submit (reconcile/Reconciler's log line). */
    private static final Pattern LOOKUP_RESOLVED = Pattern.compile(
            "reconcile job=(\\S+) source=poller status=submission_unknown .*changed=true");

    private static final ObjectMapper JSON = io.jobgate.common.Json.MAPPER;

    private final GatewayProcesses parties;
    private final int tenants;
    private final String body;
    private int sent;
    private int placedOnSimulator;
    private volatile String failure;

    PoolLostReplies(GatewayProcesses parties, int tenants, String body) {
        this.parties = parties;
        this.tenants = tenants;
        this.body = body;
    }

    /**
     * Sends {@code count} such jobs spread over {@code seconds} from {@code from}; then, when the weights placed none
     * on the simulator (a coin toss each), more until one is: the case needs at least one there.
     */
    void send(long from, int seconds, int count) {
        try {
            for (int k = 0; k < count; k++) {
                long wait = from + Math.round((k + 0.5) * seconds * 1000.0 / count) - System.currentTimeMillis();
                if (wait > 0) {
                    Thread.sleep(wait); // spread over the phase, among the other arrivals
                }
                sendOne();
            }
            for (int extra = 0; placedOnSimulator == 0 && extra < MOST_EXTRA; extra++) {
                sendOne();
            }
        } catch (InterruptedException stopped) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            failure = e.toString();
        }
    }

    private void sendOne() throws Exception {
        int k = sent++;
        HttpRequest.Builder post = parties.jobPost(body).header("X-Correlation-Id", CORRELATION_PREFIX + parties.run + "-" + k);
        parties.postHeaders(k % tenants).forEach(post::header);
        HttpResponse<String> r = parties.http.send(post.build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 202) {
            throw new IllegalStateException("a lost-reply job was refused: " + r.statusCode() + " " + r.body());
        }
        if ("simulator".equals(JSON.readTree(r.body()).path("provider").asText())) {
            placedOnSimulator++;
        }
    }

    /** Checks the jobs once they ended and prints one line; throws when one was resubmitted elsewhere or did not succeed once. */
    void check(Connection db) throws Exception {
        if (failure != null) {
            throw new IllegalStateException("the lost-reply jobs could not be sent: " + failure);
        }
        Set<String> resolvedByLookup = resolvedByLookup();
        int onSimulator = 0;
        int unknown = 0;
        int byLookup = 0;
        int onOpenai = 0;
        int simulatorOnce = 0;
        int openaiOnce = 0;
        List<String> broken = new ArrayList<>();
        for (Job job : jobs(db)) {
            boolean succeededOnce = job.status.equals("succeeded") && job.debits == 1 && job.refunds == 0 && job.succeededAttempts <= 1;
            if (!succeededOnce) {
                broken.add(job.id + " " + job.status + " (debits " + job.debits + ", refunds " + job.refunds + ", attempts " + job.attempts + ")");
            }
            if (job.movedAfterUnknown()) {
                broken.add(job.id + " resubmitted to another member after its ambiguous attempt: " + job.attempts);
            }
            if (!job.firstOn("simulator")) {
                onOpenai++; // no fault there: the correlation id means something to the simulator only
                openaiOnce += succeededOnce ? 1 : 0;
                continue;
            }
            onSimulator++;
            simulatorOnce += succeededOnce && job.attempts.stream().allMatch(a -> a.startsWith("simulator:")) ? 1 : 0;
            if (job.attempts.contains("simulator:submission_unknown")) {
                unknown++;
            } else {
                broken.add(job.id + " placed on the simulator never went through submission_unknown: " + job.attempts);
            }
            if (resolvedByLookup.contains(job.id)) {
                byLookup++;
            } else {
                broken.add(job.id + " was not resolved by the poller's lookup: " + job.attempts);
            }
        }
        System.out.printf("%n  lost replies: %d jobs sent in phase 1 with the simulator's lose_reply fault; %d placed on the simulator:"
                        + " %d through submission_unknown, %d resolved by its lookup, %d succeeded once with every attempt there;"
                        + " %d placed on openai (no fault there): %d succeeded once%n",
                sent, onSimulator, unknown, byLookup, simulatorOnce, onOpenai, openaiOnce);
        if (onSimulator == 0) {
            broken.add("none was placed on the simulator");
        }
        if (!broken.isEmpty()) {
            // A lost reply settled anywhere but by asking its member is a render that may run twice: the run fails.
            throw new IllegalStateException("the pool run broke a promise on lost replies: " + String.join("; ", broken));
        }
    }

    /** Jobs whose ambiguous submit the poller's lookup resolved, by the gateway's log. */
    private Set<String> resolvedByLookup() throws IOException {
        Set<String> ids = new HashSet<>();
        try (var lines = Files.lines(parties.dir.resolve("gateway.log"))) {
            lines.forEach(line -> {
                Matcher m = LOOKUP_RESOLVED.matcher(line);
                if (m.find()) {
                    ids.add(m.group(1));
                }
            });
        }
        return ids;
    }

    /** One lost-reply job as the database has it; {@code attempts}: {@code member:outcome} in attempt order. */
    private record Job(String id, String status, List<String> attempts, long succeededAttempts, long debits, long refunds) {

        boolean firstOn(String member) {
            return !attempts.isEmpty() && attempts.get(0).startsWith(member + ":");
        }

        /** An attempt on another member than the one whose submit's outcome was unknown, after it. */
        boolean movedAfterUnknown() {
            for (int i = 0; i < attempts.size(); i++) {
                if (attempts.get(i).endsWith(":submission_unknown")) {
                    String member = attempts.get(i).substring(0, attempts.get(i).indexOf(':'));
                    for (String later : attempts.subList(i + 1, attempts.size())) {
                        if (!later.startsWith(member + ":")) {
                            return true;
                        }
                    }
                }
            }
            return false;
        }
    }

    private List<Job> jobs(Connection db) throws Exception {
        List<Job> jobs = new ArrayList<>();
        try (PreparedStatement s = db.prepareStatement("""
                SELECT j.job_id, j.status,
                       (SELECT array_agg(a.adapter || ':' || coalesce(a.outcome, 'open') ORDER BY a.attempt) FROM attempts a WHERE a.job_id = j.job_id),
                       (SELECT count(*) FROM attempts a WHERE a.job_id = j.job_id AND a.outcome IN ('succeeded', 'late_succeeded')),
                       (SELECT count(*) FROM ledger l WHERE l.job_id = j.job_id AND l.entry_type = 'debit'),
                       (SELECT count(*) FROM ledger l WHERE l.job_id = j.job_id AND l.entry_type = 'refund')
                  FROM jobs j WHERE j.tenant_id LIKE ? AND j.correlation_id LIKE ?""")) {
            s.setString(1, parties.tenantPattern());
            s.setString(2, CORRELATION_PREFIX + "%");
            try (ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    java.sql.Array attempts = rs.getArray(3);
                    jobs.add(new Job(rs.getString(1), rs.getString(2),
                            attempts == null ? List.of() : List.of((String[]) attempts.getArray()), rs.getLong(4), rs.getLong(5), rs.getLong(6)));
                }
            }
        }
        return jobs;
    }

    /** Whether a job of this case, by its correlation id (their accept → final includes a lookup's wait: not a pool figure). */
    static boolean isOne(String correlationId) {
        return correlationId != null && correlationId.startsWith(CORRELATION_PREFIX);
    }
}
