package io.jobgate.bench;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import org.apache.camel.CamelContext;

/**
 * Worker figures on an idle gateway: a job's time from accept (the client's POST) to the moment
 * the provider receives the call, and on to the recorded success, with a local HTTP provider that
 * answers at once (so the figures are jobgate's own overhead: relay, broker, lease, gate, adapter).
 * Then the retry's punctuality: the provider answers each job's first call with 429 and
 * {@code Retry-After: 1}, and the second call's arrival is compared with the due time the gateway
 * wrote for it (the retry's dispatch event), which the relay's timer is meant to meet within
 * milliseconds (issue 12: within 50 ms).
 */
final class WorkerBench {

    static final String BODY = FakeProvider.BODY;

    /** The retry's due time, as the gateway wrote it: the job's newest dispatch event. */
    static final String DUE = "SELECT available_at FROM outbox WHERE job_id = ? AND event_type = 'dispatch' "
            + "ORDER BY event_id DESC LIMIT 1";

    /** A job's first provider call (nanoTime). */
    private final Map<String, CompletableFuture<Long>> arrivals = new ConcurrentHashMap<>();
    /** A job's second provider call (wall clock: compared with the due time the gateway wrote). */
    private final Map<String, CompletableFuture<Instant>> retries = new ConcurrentHashMap<>();
    private final FakeProvider provider;

    WorkerBench(FakeProvider provider) {
        this.provider = provider;
        provider.onCall(job -> {
            long nanos = System.nanoTime();
            Instant wall = Instant.now();
            if (!arrivals.computeIfAbsent(job, k -> new CompletableFuture<>()).complete(nanos)) {
                retries.computeIfAbsent(job, k -> new CompletableFuture<>()).complete(wall);
            }
        });
    }

    void run(CamelContext context, AdmissionLoad load, int samples, int warmUpSeconds) throws Exception {
        run(context, load, samples, warmUpSeconds, 0);
    }

    /** @param retrySamples jobs whose first call gets a 429 (each costs its Retry-After, 1 s); 0: none */
    void run(CamelContext context, AdmissionLoad load, int samples, int warmUpSeconds, int retrySamples) throws Exception {
        provider.loadAdapter(context);
        WorkerRoutes.start(context);
        DataSource ds = context.getRegistry().lookupByNameAndType("dataSource", DataSource.class);
        try {
            // Warm the JIT on this path first (on two cores C2 needs tens of seconds).
            long warmUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(warmUpSeconds);
            int warmJobs = 0;
            while (System.nanoTime() < warmUntil) {
                measure(load, ds, 20);
                warmJobs += 20;
            }
            double[][] figures = measure(load, ds, samples);
            System.out.printf("%nWorker, idle gateway, one job at a time (%d jobs after %d warm-up jobs; provider answers at once):%n",
                    samples, warmJobs);
            System.out.printf("  accept -> provider call:    p50 %.2f ms  p99 %.2f ms%n", figures[0][0], figures[0][1]);
            System.out.printf("  provider call -> succeeded: p50 %.2f ms  p99 %.2f ms%n", figures[1][0], figures[1][1]);
            System.out.printf("  accept -> succeeded:        p50 %.2f ms  p99 %.2f ms  (output checked and promoted)%n",
                    figures[2][0], figures[2][1]);
            System.out.println("  (accept = the client starts POST /v1/jobs; succeeded = the job row is final)");
            if (retrySamples > 0) {
                measureRetries(load, ds, Math.min(3, retrySamples)); // the 429 path's own first runs, unmeasured
                double[] late = measureRetries(load, ds, retrySamples);
                System.out.printf("  due retry -> provider call: p50 %.2f ms  p99 %.2f ms  min %.2f ms  (%d jobs: first call 429 + "
                                + "Retry-After: %d; lateness of the second call after the due time the gateway wrote)%n",
                        late[0], late[1], late[2], retrySamples, FakeProvider.RETRY_AFTER_SECONDS);
            }
        } finally {
            WorkerRoutes.stop(context);
        }
    }

    /**
     * {@code samples} jobs, one at a time, whose first provider call is answered 429 + Retry-After:
     * how late the second call reached the provider after the due time the gateway wrote for it
     * (p50, p99, min in ms; never negative if no retry starts before its Retry-After).
     */
    private double[] measureRetries(AdmissionLoad load, DataSource ds, int samples) throws Exception {
        List<Double> lateness = new ArrayList<>();
        provider.throttleFirstCalls(true);
        try (Connection c = ds.getConnection();
             PreparedStatement finalized = c.prepareStatement("SELECT status FROM jobs WHERE job_id = ? AND finalized_at IS NOT NULL");
             PreparedStatement due = c.prepareStatement(DUE)) {
            for (int i = 0; i < samples; i++) {
                String job = load.postOne();
                Instant second = retries.computeIfAbsent(job, k -> new CompletableFuture<>()).get(30, TimeUnit.SECONDS);
                due.setObject(1, UUID.fromString(job));
                Instant dueAt;
                try (ResultSet rs = due.executeQuery()) {
                    if (!rs.next()) {
                        throw new IllegalStateException("bench job " + job + " has no dispatch event");
                    }
                    dueAt = rs.getTimestamp(1).toInstant();
                }
                lateness.add(Duration.between(dueAt, second).toNanos() / 1e6);
                awaitSucceeded(finalized, job);
                arrivals.remove(job);
                retries.remove(job);
            }
        } finally {
            provider.throttleFirstCalls(false);
        }
        double[] p = percentiles(lateness);
        return new double[] {p[0], p[1], lateness.stream().mapToDouble(Double::doubleValue).min().orElse(Double.NaN)};
    }

    private static void awaitSucceeded(PreparedStatement finalized, String job) throws Exception {
        finalized.setObject(1, UUID.fromString(job));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            try (ResultSet rs = finalized.executeQuery()) {
                if (rs.next()) {
                    if (!"succeeded".equals(rs.getString(1))) {
                        throw new IllegalStateException("bench job " + job + " ended " + rs.getString(1));
                    }
                    return;
                }
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("bench job " + job + " did not finish within 30 s");
            }
            java.util.concurrent.locks.LockSupport.parkNanos(250_000); // poll without burning a core
        }
    }

    private double[][] measure(AdmissionLoad load, DataSource ds, int samples) throws Exception {
        List<Double> toCall = new ArrayList<>();
        List<Double> toFinal = new ArrayList<>();
        List<Double> total = new ArrayList<>();
        try (Connection c = ds.getConnection();
             PreparedStatement finalized = c.prepareStatement("SELECT status FROM jobs WHERE job_id = ? AND finalized_at IS NOT NULL")) {
            for (int i = 0; i < samples; i++) {
                long t0 = System.nanoTime();
                String job = load.postOne();
                long called = arrivals.computeIfAbsent(job, k -> new CompletableFuture<>()).get(30, TimeUnit.SECONDS);
                toCall.add((called - t0) / 1e6);
                awaitSucceeded(finalized, job);
                long done = System.nanoTime();
                toFinal.add((done - called) / 1e6);
                total.add((done - t0) / 1e6);
                arrivals.remove(job);
            }
        }
        return new double[][] {percentiles(toCall), percentiles(toFinal), percentiles(total)};
    }

    private static double[] percentiles(List<Double> values) {
        double[] sorted = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        return new double[] {sorted[sorted.length / 2], sorted[Math.min(sorted.length - 1, (int) Math.ceil(0.99 * sorted.length) - 1)]};
    }
}
