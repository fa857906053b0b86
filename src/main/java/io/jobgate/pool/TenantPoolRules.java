package io.jobgate.pool;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;

import io.jobgate.common.StartRefused;
import io.jobgate.provider.ProviderCatalog;
import io.jobgate.tenant.Tenant;

/**
 * The tenants' rules of where their jobs run, checked at start against the providers and pools, where both are known:
 * a rule naming a provider that is not configured refuses the start (a typo would otherwise allow or deny nothing),
 * and so does a rule that leaves a kind of job no member of any of its pools the tenant may use (its pool jobs could
 * only fail). Only kinds that have pools are checked: a tenant that may use no provider of a kind without pools is
 * told so per job (422 provider_not_allowed).
 */
final class TenantPoolRules {

    private TenantPoolRules() {
    }

    static void check(Iterable<Tenant> tenants, PoolCatalog pools, ProviderCatalog providers) {
        for (Tenant tenant : tenants) {
            for (String name : tenant.rules().allow().stream().sorted().toList()) {
                known(tenant, "allow", name, providers);
            }
            for (String name : tenant.rules().deny().stream().sorted().toList()) {
                known(tenant, "deny", name, providers);
            }
            // By kind and name: the same refusal at every start.
            Map<String, List<Pool>> byKind = new TreeMap<>(pools.all().stream().sorted(java.util.Comparator.comparing(Pool::name))
                    .collect(Collectors.groupingBy(Pool::kind)));
            byKind.forEach((kind, ofKind) -> {
                boolean usable = ofKind.stream().flatMap(p -> p.providers().stream()).anyMatch(m -> tenant.whyNot(m) == null);
                if (!usable) {
                    throw new StartRefused("tenant " + tenant.id() + ": a tenant rule that leaves " + kind + " jobs no member: "
                            + "its providers rule allows no member of " + ofKind.stream().map(p -> "pool " + p.name() + " ("
                            + String.join(", ", p.providers()) + ")").collect(Collectors.joining(", "))
                            + "; allow one of them or drop the pool");
                }
            });
        }
    }

    private static void known(Tenant tenant, String which, String name, ProviderCatalog providers) {
        if (providers.find(name).isEmpty()) {
            throw new StartRefused("tenant " + tenant.id() + ": providers." + which + " names '" + name
                    + "', which is not a configured provider; name one of jobgate.providers.dirs or drop it");
        }
    }
}
