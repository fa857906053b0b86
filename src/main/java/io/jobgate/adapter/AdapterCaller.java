package io.jobgate.adapter;

import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.jobgate.provider.Provider;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.support.DefaultExchange;

/**
 * Calls a provider's adapter route on a fresh exchange (the adapter sees only the contract's
 * properties and body) within the provider's call deadline, for callers outside a route:
 * reconciliation's lookups and webhook parsing. (The worker's route calls its adapter itself.)
 */
public final class AdapterCaller {

    /** Backstop beyond the deadline the adapter applies to its own HTTP call. */
    private static final long GRACE_MILLIS = 2_000;

    private final ExecutorService calls;
    private final ProducerTemplate producer;
    private final CamelContext context;

    public AdapterCaller(CamelContext context) {
        this.context = context;
        this.calls = context.getExecutorServiceManager().newCachedThreadPool(this, "adapter-call");
        this.producer = context.createProducerTemplate();
    }

    public AdapterResult call(Provider provider, String operation, Object body, Map<String, Object> properties) {
        return call(provider, provider.adapterUri(), operation, body, properties);
    }

    /** The same through another route of the provider ({@code uri}: a canary candidate's, docs/canary.md). */
    public AdapterResult call(Provider provider, String uri, String operation, Object body, Map<String, Object> properties) {
        Exchange adapter = new DefaultExchange(context);
        AdapterContract.request(adapter, provider, operation, body, properties);
        long deadline = provider.callDeadline().toMillis();
        Future<Exchange> reply = calls.submit(() -> producer.send(uri, adapter));
        try {
            return AdapterResult.of(reply.get(deadline + GRACE_MILLIS, TimeUnit.MILLISECONDS), provider.errors());
        } catch (TimeoutException e) {
            reply.cancel(true);
            return AdapterResult.deadlinePassed(deadline);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            reply.cancel(true);
            return AdapterResult.deadlinePassed(deadline);
        } catch (ExecutionException e) {
            return AdapterResult.ofException(e.getCause());
        }
    }
}
