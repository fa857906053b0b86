package io.jobgate.api;

import io.jobgate.tenant.Tenant;
import io.jobgate.tenant.TenantDirectory;
import org.apache.camel.Exchange;

/** Route step: resolves the caller's tenant from its bearer key, or refuses with 401. */
public final class TenantAuth {

    /** Exchange property holding the authenticated {@link Tenant}. */
    public static final String TENANT = "jobgate.tenant";

    private final TenantDirectory tenants;

    public TenantAuth(TenantDirectory tenants) {
        this.tenants = tenants;
    }

    public void authenticate(Exchange exchange) {
        Tenant tenant = tenants.authenticate(exchange.getIn().getHeader("Authorization", String.class));
        exchange.setProperty(TENANT, tenant);
    }

    public static Tenant tenant(Exchange exchange) {
        Tenant tenant = exchange.getProperty(TENANT, Tenant.class);
        if (tenant == null) {
            throw new IllegalStateException("route did not authenticate before " + exchange.getFromRouteId());
        }
        return tenant;
    }
}
