package io.jobgate.adapter;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;

import io.jobgate.job.ProviderGates;
import io.jobgate.provider.Provider;
import io.jobgate.provider.ProviderCatalog;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Provider readiness (route {@code provider-readiness}, at start and every {@code
 * jobgate.providers.readiness-period-ms}). An adapter may name a cheap readiness call in its settings
 * ({@code readiness-url}, e.g. a models list, with {@code readiness-authorization} when it needs a key).
 * It is tried up to {@link #TRIES} times, waiting out a {@code Retry-After} (capped) or a short back-off
 * between tries. A provider that is not ready has its gate closed until the next check, for every
 * instance: its jobs wait in {@code retry_wait} without spending an attempt, and health and the
 * gate metric show why — instead of jobs failing one by one. Once ready again, a gate this check
 * closed opens at once (a 429's close is left to run out).
 */
public final class ProviderReadiness {

    private static final Logger LOG = LoggerFactory.getLogger(ProviderReadiness.class);
    static final int TRIES = 4;
    static final String REASON = "not ready: ";
    /** The longest wait between two tries, whatever a Retry-After asks: the check must end. */
    static final Duration MAX_PAUSE = Duration.ofSeconds(5);

    private final ProviderCatalog providers;
    private final ProviderGates gates;
    private final Clock clock;
    private final Duration period;
    private final Duration backoff;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    public ProviderReadiness(ProviderCatalog providers, ProviderGates gates, Clock clock, Duration period, Duration backoff) {
        this.providers = providers;
        this.gates = gates;
        this.clock = clock;
        this.period = period;
        this.backoff = backoff;
    }

    /** Route step: every provider with a readiness call. */
    public void checkAll() {
        for (Provider provider : providers.all()) {
            String url = provider.settings().get("readiness-url");
            if (url != null && !url.isBlank()) {
                check(provider, url);
            }
        }
    }

    /** Checks one provider; answers whether it is ready. */
    boolean check(Provider provider, String url) {
        String why = null;
        for (int attempt = 1; attempt <= TRIES; attempt++) {
            Duration pause = backoff.multipliedBy(attempt);
            try {
                HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(url)).GET()
                        .timeout(provider.callDeadline().compareTo(Duration.ofSeconds(10)) < 0 ? provider.callDeadline() : Duration.ofSeconds(10));
                String authorization = provider.settings().get("readiness-authorization");
                if (authorization != null && !authorization.isBlank()) {
                    request.header("Authorization", authorization);
                }
                HttpResponse<Void> answer = http.send(request.build(), HttpResponse.BodyHandlers.discarding());
                if (answer.statusCode() / 100 == 2) {
                    why = null;
                    break;
                }
                why = "HTTP " + answer.statusCode() + " from its readiness call";
                Instant retryAt = java.util.Optional.ofNullable(RetryAfter.fromReply(
                                answer.headers().firstValue(RetryAfter.MILLIS_HEADER).orElse(null),
                                answer.headers().firstValue("Retry-After").orElse(null)))
                        .flatMap(h -> RetryAfter.earliestRetry(h, clock.instant())).orElse(null);
                if (retryAt != null) {
                    pause = Duration.between(clock.instant(), retryAt);
                }
            } catch (IOException e) {
                why = "readiness call failed: " + e.getClass().getSimpleName();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
            if (attempt < TRIES) {
                pause(pause);
            }
        }
        if (why == null) {
            if (gates.openIfClosedFor(provider.name(), REASON)) {
                LOG.info("provider {} is ready again: its gate is open", provider.name());
            }
            return true;
        }
        gates.close(provider.name(), clock.instant().plus(period), REASON + why + " (" + TRIES + " tries)");
        LOG.warn("provider {} {}{} ({} tries): its gate stays closed until the next check; its jobs wait",
                provider.name(), REASON, why, TRIES);
        return false;
    }

    private static void pause(Duration pause) {
        long millis = Math.max(0, Math.min(pause.toMillis(), MAX_PAUSE.toMillis()));
        try {
            Thread.sleep(millis); // between tries of a remote call, on the readiness route's own thread
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
