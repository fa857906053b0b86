package io.jobgate.tenant;

import java.util.Map;

/**
 * A tenant as configured: its API key (stored only as a SHA-256 digest), admission limits and
 * credit grants (reference → micro-units), which become ledger entries once each, and its rules of where its jobs
 * may run ({@link ProviderRules}).
 */
public record Tenant(String id, String displayName, String apiKeySha256, int maxOpenJobs, int maxRunningJobs,
                     long maxQueuedBytes, Map<String, Long> creditGrants, ProviderRules rules) {

    /** A tenant without rules of where its jobs run. */
    public Tenant(String id, String displayName, String apiKeySha256, int maxOpenJobs, int maxRunningJobs,
                  long maxQueuedBytes, Map<String, Long> creditGrants) {
        this(id, displayName, apiKeySha256, maxOpenJobs, maxRunningJobs, maxQueuedBytes, creditGrants, ProviderRules.NONE);
    }

    /** Why this tenant may not use {@code provider}, or null when it may. */
    public String whyNot(String provider) {
        return rules.whyNot(id, provider);
    }
}
