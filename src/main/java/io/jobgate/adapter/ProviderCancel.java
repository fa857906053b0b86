package io.jobgate.adapter;

import java.util.Map;
import java.util.UUID;

import io.jobgate.job.JobConditions;
import io.jobgate.job.JobRows;
import io.jobgate.provider.Provider;
import io.jobgate.provider.ProviderCatalog;
import org.apache.camel.Exchange;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * After a tenant cancelled a job that a provider is working on, asks the provider to stop it
 * (operation {@code cancel}, for adapters that list it): a long render is not left running for
 * nothing. The job is already cancelled and refunded by the documented rule; what the provider
 * answers changes nothing of it and is logged and counted ({@code jobgate_provider_cancels_total}).
 * Only the adapter's {@code cancelled} says the provider stopped it (or had nothing left to stop); any
 * other answer — a 404, a refused or failed call — is a cancel that did not reach the task, logged as a
 * warning: the provider may still be rendering, and billing, it.
 */
public final class ProviderCancel {

    private static final Logger LOG = LoggerFactory.getLogger(ProviderCancel.class);

    private final JobRows jobs;
    private final JobConditions conditions;
    private final ProviderCatalog providers;
    private final AdapterCaller adapters;

    public ProviderCancel(JdbcTemplate jdbc, ProviderCatalog providers, AdapterCaller adapters) {
        this.jobs = new JobRows(jdbc);
        this.conditions = new JobConditions(jdbc);
        this.providers = providers;
        this.adapters = adapters;
    }

    /** Route step after {@code jobsApi.cancel} (property {@code jobgateCancelledJob}: the path's job id); leaves the reply as it is. */
    public void afterCancel(Exchange exchange) {
        String id = exchange.getProperty("jobgateCancelledJob", String.class);
        try {
            cancel(UUID.fromString(id));
        } catch (IllegalArgumentException | NullPointerException e) {
            // not a job id: the reply already says so
        }
    }

    /**
     * A task the provider started for a job that was cancelled while the submit was on the wire (its
     * reference was never recorded): stopped like any other, when the job is indeed cancelled.
     */
    public String orphaned(UUID jobId, Provider provider, String task, String state) {
        if (!provider.supports(AdapterContract.CANCEL) || !conditions.cancelled(jobId)) {
            return null;
        }
        return ask(jobId, provider, task, state, null);
    }

    /** @return the adapter's outcome, or null when there was nothing to ask */
    public String cancel(UUID jobId) {
        JobRows.CancelledTask task = jobs.cancelledTask(jobId).orElse(null);
        if (task == null) {
            return null;
        }
        Provider provider = providers.find(task.provider()).orElse(null);
        if (provider == null || !provider.supports(AdapterContract.CANCEL)) {
            return null;
        }
        return ask(jobId, provider, task.providerTask(), task.providerState(), task.kind());
    }

    /** Told of every answer: the provider and the adapter's outcome (the metric). */
    private volatile java.util.function.BiConsumer<String, String> answered = (provider, outcome) -> { };

    public void onAnswer(java.util.function.BiConsumer<String, String> listener) {
        this.answered = listener;
    }

    private String ask(UUID jobId, Provider provider, String task, String state, String kind) {
        Map<String, Object> properties = new java.util.LinkedHashMap<>();
        properties.put(AdapterContract.JOB_ID, jobId.toString());
        properties.put(AdapterContract.IDEMPOTENCY_KEY, AdapterContract.idempotencyKey(jobId));
        properties.put(AdapterContract.PROVIDER_TASK, task);
        properties.put(AdapterContract.PROVIDER_STATE, state);
        properties.put(AdapterContract.KIND, kind);
        AdapterResult answer = adapters.call(provider, AdapterContract.CANCEL, null, properties);
        String outcome = answer.category() == null ? answer.outcome() : answer.category().wire();
        if ("cancelled".equals(outcome)) {
            LOG.info("cancel job={} provider={} task={} provider answered {} (HTTP {})", jobId, provider.name(), task, outcome,
                    answer.httpStatus());
        } else {
            LOG.warn("cancel job={} provider={} task={} did not reach the task: {} (HTTP {}{}); the provider may still be working on it",
                    jobId, provider.name(), task, outcome, answer.httpStatus(), answer.message() == null ? "" : ", " + answer.message());
        }
        answered.accept(provider.name(), outcome == null ? "none" : outcome);
        return outcome;
    }
}
