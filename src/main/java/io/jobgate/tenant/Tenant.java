package io.jobgate.tenant;

import java.util.Map;

/**
 * A tenant as configured: its API key (stored only as a SHA-256 digest), admission limits and
 * credit grants (reference → micro-units), which become ledger entries once each.
 */
public record Tenant(String id, String displayName, String apiKeySha256, int maxOpenJobs, int maxRunningJobs,
                     long maxQueuedBytes, Map<String, Long> creditGrants) {
}
