package io.jobgate.usage;

import org.apache.camel.CamelContext;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The wiring of usage: the roll-up step (routes call it by name). Usage uses nothing of jobgate, so its one setting
 * comes in as a value; the reports are made by the API that serves them.
 */
public final class UsageWiring {

    private UsageWiring() {
    }

    /** @param rollupBatch the pending rows of each queue (ledger, billing changes) one round folds at most */
    public static void bind(CamelContext context, JdbcTemplate jdbc, int rollupBatch) {
        context.getRegistry().bind("usageRollups", new UsageRollups(jdbc, rollupBatch));
    }
}
