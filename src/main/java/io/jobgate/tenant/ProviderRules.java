package io.jobgate.tenant;

import java.util.Set;

/**
 * A tenant's rules of where its jobs may run (its tenants file's {@code providers} and {@code failover}): data
 * residency ("EU only": an allow list) or "never provider X" (a deny list), and whether a pool job may leave the
 * member it was placed on at admission. Checked against the providers and pools at start (pool/TenantPoolRules).
 *
 * @param allow    only these providers, when not empty
 * @param deny     never these providers
 * @param failover false: a pool job stays on its member (no move after a failure or at a closed gate)
 */
public record ProviderRules(Set<String> allow, Set<String> deny, boolean failover) {

    /** No rule: every provider, failover allowed. */
    public static final ProviderRules NONE = new ProviderRules(Set.of(), Set.of(), true);

    public ProviderRules {
        allow = Set.copyOf(allow);
        deny = Set.copyOf(deny);
    }

    /** Why the tenant {@code tenantId} may not use {@code provider}, or null when it may. */
    public String whyNot(String tenantId, String provider) {
        if (deny.contains(provider)) {
            return "tenant " + tenantId + " may not use it (providers.deny)";
        }
        if (!allow.isEmpty() && !allow.contains(provider)) {
            return "tenant " + tenantId + " may not use it (not in providers.allow)";
        }
        return null;
    }
}
