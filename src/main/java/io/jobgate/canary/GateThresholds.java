package io.jobgate.canary;

import java.time.Duration;

import io.jobgate.provider.Provider;

/**
 * A canary's gates for one provider, from its provider file ({@code canary.*}), each with a default:
 * the sliding window, the minimum sample before any gate judges, and the thresholds. A bad value
 * fails loudly, naming the entry.
 *
 * @param window              {@code canary.window-seconds} (600): attempts started this recently count
 * @param minSample           {@code canary.min-sample} (20): fewer finished attempts judge nothing
 * @param maxErrorRate        {@code canary.max-error-rate} (0.2): attempts that ended in an error, of all
 * @param maxP95Millis        {@code canary.max-p95-ms} (the provider's call deadline × 0.8): p95 call time
 * @param maxInvalidOutputRate {@code canary.max-invalid-output-rate} (0.05): outputs the checks rejected
 * @param minEvaluated        {@code canary.min-evaluated} (5): fewer evaluated outputs judge no quality
 * @param minFieldAccuracy    {@code canary.min-field-accuracy} (0.9): fields the evaluator read right, of all
 * @param minTotalsCorrect    {@code canary.min-totals-correct} (0.8): outputs whose totals all read right, of all
 */
public record GateThresholds(Duration window, int minSample, double maxErrorRate, long maxP95Millis,
                             double maxInvalidOutputRate, int minEvaluated, double minFieldAccuracy, double minTotalsCorrect) {

    public static final int DEFAULT_MIN_EVALUATED = 5;
    public static final double DEFAULT_MIN_FIELD_ACCURACY = 0.9;
    public static final double DEFAULT_MIN_TOTALS_CORRECT = 0.8;

    /** The operational gates only (the quality gate at its defaults). */
    public GateThresholds(Duration window, int minSample, double maxErrorRate, long maxP95Millis, double maxInvalidOutputRate) {
        this(window, minSample, maxErrorRate, maxP95Millis, maxInvalidOutputRate, DEFAULT_MIN_EVALUATED,
                DEFAULT_MIN_FIELD_ACCURACY, DEFAULT_MIN_TOTALS_CORRECT);
    }

    public static final int DEFAULT_WINDOW_SECONDS = 600;
    public static final int DEFAULT_MIN_SAMPLE = 20;
    public static final double DEFAULT_MAX_ERROR_RATE = 0.2;
    public static final double DEFAULT_P95_SHARE_OF_DEADLINE = 0.8;
    public static final double DEFAULT_MAX_INVALID_OUTPUT_RATE = 0.05;

    public static GateThresholds of(Provider provider) {
        java.util.Map<String, String> s = provider.settings();
        String prefix = "jobgate.provider." + provider.name() + ".canary.";
        long deadline = provider.callDeadline().toMillis();
        return new GateThresholds(
                Duration.ofSeconds(whole(prefix + "window-seconds", s.get("canary.window-seconds"), DEFAULT_WINDOW_SECONDS, 10, 86_400)),
                (int) whole(prefix + "min-sample", s.get("canary.min-sample"), DEFAULT_MIN_SAMPLE, 1, 100_000),
                rate(prefix + "max-error-rate", s.get("canary.max-error-rate"), DEFAULT_MAX_ERROR_RATE),
                whole(prefix + "max-p95-ms", s.get("canary.max-p95-ms"), Math.round(deadline * DEFAULT_P95_SHARE_OF_DEADLINE), 1, 3_600_000),
                rate(prefix + "max-invalid-output-rate", s.get("canary.max-invalid-output-rate"), DEFAULT_MAX_INVALID_OUTPUT_RATE),
                (int) whole(prefix + "min-evaluated", s.get("canary.min-evaluated"), DEFAULT_MIN_EVALUATED, 1, 100_000),
                rate(prefix + "min-field-accuracy", s.get("canary.min-field-accuracy"), DEFAULT_MIN_FIELD_ACCURACY),
                rate(prefix + "min-totals-correct", s.get("canary.min-totals-correct"), DEFAULT_MIN_TOTALS_CORRECT));
    }

    private static long whole(String key, String value, long absent, long min, long max) {
        if (value == null || value.isBlank()) {
            return absent;
        }
        try {
            long n = Long.parseLong(value.trim());
            if (n < min || n > max) {
                throw new NumberFormatException();
            }
            return n;
        } catch (NumberFormatException e) {
            throw new IllegalStateException(key + " must be a whole number from " + min + " to " + max + ", was " + value);
        }
    }

    private static double rate(String key, String value, double absent) {
        if (value == null || value.isBlank()) {
            return absent;
        }
        try {
            double r = Double.parseDouble(value.trim());
            if (!(r >= 0 && r <= 1)) {
                throw new NumberFormatException();
            }
            return r;
        } catch (NumberFormatException e) {
            throw new IllegalStateException(key + " must be a share from 0 to 1 (0.2: 20 %), was " + value);
        }
    }
}
