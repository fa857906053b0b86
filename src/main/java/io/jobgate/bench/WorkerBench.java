package io.jobgate.bench;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
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
 */
final class WorkerBench {

    static final String BODY = FakeProvider.BODY;

    private final Map<String, CompletableFuture<Long>> arrivals = new ConcurrentHashMap<>();
    private final FakeProvider provider;

    WorkerBench(FakeProvider provider) {
        this.provider = provider;
        provider.onCall(job -> arrivals.computeIfAbsent(job, k -> new CompletableFuture<>()).complete(System.nanoTime()));
    }

    void run(CamelContext context, AdmissionLoad load, int samples, int warmUpSeconds) throws Exception {
        provider.loadAdapter(context);
        context.getRouteController().startRoute("worker");
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
            System.out.printf("  accept -> provider call:   p50 %.2f ms  p99 %.2f ms%n", figures[0][0], figures[0][1]);
            System.out.printf("  provider call -> succeeded: p50 %.2f ms  p99 %.2f ms%n", figures[1][0], figures[1][1]);
            System.out.println("  (accept = the client starts POST /v1/jobs; succeeded = the job row is final)");
        } finally {
            context.getRouteController().stopRoute("worker");
        }
    }

    private double[][] measure(AdmissionLoad load, DataSource ds, int samples) throws Exception {
        List<Double> toCall = new ArrayList<>();
        List<Double> toFinal = new ArrayList<>();
        try (Connection c = ds.getConnection();
             PreparedStatement finalized = c.prepareStatement("SELECT status FROM jobs WHERE job_id = ? AND finalized_at IS NOT NULL")) {
            for (int i = 0; i < samples; i++) {
                long t0 = System.nanoTime();
                String job = load.postOne();
                long called = arrivals.computeIfAbsent(job, k -> new CompletableFuture<>()).get(30, TimeUnit.SECONDS);
                toCall.add((called - t0) / 1e6);
                finalized.setObject(1, UUID.fromString(job));
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (true) {
                    try (ResultSet rs = finalized.executeQuery()) {
                        if (rs.next()) {
                            if (!"succeeded".equals(rs.getString(1))) {
                                throw new IllegalStateException("bench job " + job + " ended " + rs.getString(1));
                            }
                            break;
                        }
                    }
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException("bench job " + job + " did not finish within 30 s");
                    }
                    java.util.concurrent.locks.LockSupport.parkNanos(250_000); // poll without burning a core
                }
                toFinal.add((System.nanoTime() - called) / 1e6);
                arrivals.remove(job);
            }
        }
        return new double[][] {percentiles(toCall), percentiles(toFinal)};
    }

    private static double[] percentiles(List<Double> values) {
        double[] sorted = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        return new double[] {sorted[sorted.length / 2], sorted[Math.min(sorted.length - 1, (int) Math.ceil(0.99 * sorted.length) - 1)]};
    }
}
