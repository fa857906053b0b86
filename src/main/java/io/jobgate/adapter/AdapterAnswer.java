package io.jobgate.adapter;

import io.jobgate.provider.Provider;
import io.jobgate.provider.ProviderCatalog;
import io.jobgate.provider.ProviderErrors;
import org.apache.camel.AggregationStrategy;
import org.apache.camel.Exchange;

/**
 * The worker route's {@code enrich} of its adapter: the adapter runs on a copy of the worker's
 * exchange (so whatever it does to routing — a {@code stop}, an exception — stays its own), and
 * only its answer, as one {@link AdapterResult}, comes back to the worker's exchange.
 */
public final class AdapterAnswer implements AggregationStrategy {

    /** The worker's exchange property holding the answer. */
    public static final String ANSWER = "jobgateAnswer";

    private final ProviderCatalog providers;

    public AdapterAnswer(ProviderCatalog providers) {
        this.providers = providers;
    }

    @Override
    public Exchange aggregate(Exchange worker, Exchange adapter) {
        worker.setProperty(ANSWER, adapter == null
                ? AdapterResult.ofException(new IllegalStateException("the adapter route gave no answer"))
                : AdapterResult.of(adapter, errorsOf(adapter)));
        return worker;
    }

    /** The error table of the provider the adapter answered for (none when it is unknown). */
    private ProviderErrors errorsOf(Exchange adapter) {
        String name = adapter.getProperty(AdapterContract.PROVIDER, String.class);
        return name == null ? ProviderErrors.NONE : providers.find(name).map(Provider::errors).orElse(ProviderErrors.NONE);
    }
}
