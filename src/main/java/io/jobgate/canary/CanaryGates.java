package io.jobgate.canary;

import java.time.Clock;
import java.time.Instant;
import java.util.List;
import java.util.Locale;

import io.jobgate.provider.Provider;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Judges one adapter revision by its recent attempts (the sliding window of {@link GateThresholds}),
 * read from the attempts table — the same evidence on every instance, so every instance reaches the
 * same verdict. Gates: error rate (attempts that ended in an error, 429s and the job's own caps or
 * cancel excepted: those say nothing about the revision), p95 call time, rejected outputs
 * ({@code invalid_output}). Below the minimum sample no gate judges.
 */
public final class CanaryGates {

    /** Error categories that are no fault of the revision: the provider's rate limit, the job's caps, its tenant. */
    static final String NOT_ITS_FAULT = "rate_limited,exhausted,expired,cancelled";

    private final CanaryStore store;
    private final Clock clock;

    public CanaryGates(JdbcTemplate jdbc, Clock clock) {
        this.store = new CanaryStore(jdbc);
        this.clock = clock;
    }

    /**
     * What the window shows of {@code revision} of {@code provider}.
     *
     * @param tripped the first gate crossed ({@code error_rate}, {@code p95_latency}, {@code invalid_output})
     *                with its numbers, or null while it passes or the sample is too small
     */
    public record Verdict(String revision, long sample, double errorRate, long p95Millis, double invalidOutputRate,
                          boolean judged, String tripped) {
    }

    public Verdict judge(Provider provider, String revision, GateThresholds gates) {
        return judge(provider, revision, List.of(revision), gates, null);
    }

    /**
     * What the window shows of a candidate's attempts over all its per-kind {@code revisions} (one
     * verdict for the candidate, reported as {@code label}), counting only attempts started from
     * {@code judgedFrom} on when that is later than the window's start (a restart's clean slate).
     */
    public Verdict judge(Provider provider, String label, List<String> revisions, GateThresholds gates,
                         Instant judgedFrom) {
        Instant since = clock.instant().minus(gates.window());
        if (judgedFrom != null && judgedFrom.isAfter(since)) {
            since = judgedFrom;
        }
        CanaryStore.Window w = store.window(revisions, provider.name(), since, NOT_ITS_FAULT);
        long sample = w.sample();
        double errorRate = sample == 0 ? 0 : (double) w.errors() / sample;
        double invalidRate = sample == 0 ? 0 : (double) w.invalidOutputs() / sample;
        long p95 = w.p95Millis();
        boolean judged = sample >= gates.minSample();
        String tripped = null;
        if (judged && errorRate > gates.maxErrorRate()) {
            tripped = "error_rate " + percent(errorRate) + " > " + percent(gates.maxErrorRate()) + " of " + sample + " attempts";
        } else if (judged && invalidRate > gates.maxInvalidOutputRate()) {
            tripped = "invalid_output " + percent(invalidRate) + " > " + percent(gates.maxInvalidOutputRate()) + " of " + sample + " attempts";
        } else if (judged && p95 > gates.maxP95Millis()) {
            tripped = "p95_latency " + p95 + " ms > " + gates.maxP95Millis() + " ms over " + sample + " attempts";
        }
        if (tripped == null) {
            tripped = quality(provider, revisions, gates, since);
        }
        return new Verdict(label, sample, errorRate, p95, invalidRate, judged, tripped);
    }

    /**
     * The quality gate: what the evaluator read back from the revision's outputs (held or promoted) of
     * attempts started within the window ({@code evaluations}, io.jobgate.evaluation): field accuracy and
     * the share whose totals all read right. Below {@code min-evaluated} outputs it does not judge.
     */
    private String quality(Provider provider, List<String> revisions, GateThresholds gates, Instant since) {
        CanaryStore.Quality q = store.quality(revisions, provider.name(), since);
        long evaluated = q.evaluated();
        if (evaluated < gates.minEvaluated()) {
            return null;
        }
        long total = q.fieldsTotal();
        double accuracy = total == 0 ? 0 : (double) q.fieldsCorrect() / total;
        double totals = (double) q.totalsCorrect() / evaluated;
        if (accuracy < gates.minFieldAccuracy()) {
            return "quality field accuracy " + percent(accuracy) + " < " + percent(gates.minFieldAccuracy()) + " of " + evaluated
                    + " evaluated outputs";
        }
        if (totals < gates.minTotalsCorrect()) {
            return "quality totals correct " + percent(totals) + " < " + percent(gates.minTotalsCorrect()) + " of " + evaluated
                    + " evaluated outputs";
        }
        return null;
    }

    private static String percent(double share) {
        return String.format(Locale.ROOT, "%.1f %%", share * 100);
    }
}
