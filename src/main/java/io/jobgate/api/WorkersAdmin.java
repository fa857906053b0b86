package io.jobgate.api;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.jobgate.common.ApiProblem;
import io.jobgate.pool.Pool;
import io.jobgate.pool.PoolCatalog;
import io.jobgate.provider.Provider;
import io.jobgate.provider.ProviderCatalog;
import io.jobgate.workers.WorkersView;
import org.apache.camel.Exchange;

/**
 * Operators' view of the external workers (admin key; docs/workers.md, "Operators"): {@code GET /v1/admin/workers}
 * answers, per pull member (every provider with a worker key, by name; {@code ?provider=} for one), the pools it is a
 * member of, its tasks waiting, leased and ended in the last hour, the leases each worker holds, and the workers seen.
 */
public final class WorkersAdmin {

    private final ProviderCatalog providers;
    private final WorkersView view;
    private final PoolCatalog pools;

    public WorkersAdmin(ProviderCatalog providers, WorkersView view, PoolCatalog pools) {
        this.providers = providers;
        this.view = view;
        this.pools = pools;
    }

    /** The pull members: the providers with a worker key ({@code jobgate.provider.<name>.worker-key-sha256}), by name. */
    public static List<Provider> pullMembers(ProviderCatalog providers) {
        return providers.all().stream().filter(p -> p.settings().containsKey(WorkersApi.WORKER_KEY))
                .sorted(java.util.Comparator.comparing(Provider::name)).toList();
    }

    public void list(Exchange exchange) {
        String only = exchange.getIn().getHeader("provider", String.class);
        List<Provider> members = pullMembers(providers).stream().filter(p -> only == null || p.name().equals(only)).toList();
        if (only != null && members.isEmpty()) {
            throw ApiProblem.of(404, "not_found", "No pull member '" + only + "' (a provider with jobgate.provider.<name>."
                    + WorkersApi.WORKER_KEY + ").").with("field", "provider");
        }
        List<Map<String, Object>> listed = new ArrayList<>();
        for (Provider member : members) {
            WorkersView.Member seen = view.member(member.name());
            Map<String, Object> entry = new LinkedHashMap<>();
            entry.put("provider", member.name());
            entry.put("pools", pools.all().stream().filter(pool -> pool.member(member.name()).isPresent()).map(Pool::name).sorted().toList());
            entry.put("tasks", seen.tasks());
            entry.put("leases", seen.leases());
            entry.put("workers", seen.workers());
            listed.add(entry);
        }
        HttpReply.json(exchange, 200, Map.of("members", listed), Map.of());
    }
}
