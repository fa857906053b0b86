package io.jobgate.support;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import com.github.tomakehurst.wiremock.WireMockServer;
import com.github.tomakehurst.wiremock.extension.Extension;
import io.jobgate.Gateway;
import org.apache.camel.main.MainConfigurationProperties;
import org.apache.camel.test.main.junit5.CamelMainTest;
import org.apache.camel.test.main.junit5.Configure;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;

/**
 * A test class that runs against the real gateway: its Main and settings booted once per class
 * ({@link GatewayTestSupport#prepare}: a fresh port and data directory, the test PostgreSQL emptied),
 * with the class's {@link #settings()} on top, and {@link #api} calling it over HTTP.
 *
 * <p>A base class rather than a composed annotation: camel-test-main-junit5 reads {@code @CamelMainTest}
 * with {@code Class.getAnnotation}, which sees it on the class or (it is {@code @Inherited}) on a
 * superclass, never as a meta-annotation. A class that needs other attributes (say {@code useJmx})
 * declares its own {@code @CamelMainTest}, which wins over this one.
 *
 * <p>Order, as before: {@link #settings()} (start fake providers there, so their URLs can be named),
 * then prepare, then the subclass's own {@code @BeforeAll} methods (the database is emptied by then),
 * then Camel starts the gateway before the first test.
 */
@CamelMainTest(mainClass = Gateway.class, propertyPlaceholderLocations = Gateway.SETTINGS)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class GatewayTestBase {

    /** Real HTTP calls against this class's gateway. */
    protected ApiClient api;

    private final List<WireMockServer> fakeProviders = new ArrayList<>();
    private MovableClock clock;

    /**
     * The settings this class runs the gateway with, over {@link GatewayTestSupport#prepare}'s defaults
     * (none by default). Called once, before the gateway starts.
     */
    protected Map<String, String> settings() throws Exception {
        return Map.of();
    }

    /** A {@link FakeProvider} (with {@code rules}, if any), stopped after the class. */
    protected final WireMockServer fakeProvider(Extension... rules) {
        return stopAfterAll(FakeProvider.start(rules));
    }

    /** A provider stand-in this class started itself (its own WireMock options), stopped after the class. */
    protected final WireMockServer stopAfterAll(WireMockServer fake) {
        fakeProviders.add(fake);
        return fake;
    }

    /**
     * A clock this class moves, bound as the gateway's clock before the gateway wires itself: call it in a
     * field initializer ({@code final MovableClock clock = movableClock();}). Without it the gateway keeps its own.
     */
    protected final MovableClock movableClock() {
        clock = new MovableClock();
        return clock;
    }

    @Configure
    protected final void useMovableClock(MainConfigurationProperties configuration) {
        if (clock != null) {
            GatewayTestSupport.useClock(configuration, clock);
        }
    }

    @BeforeAll
    protected final void bootGateway() throws Exception {
        api = new ApiClient(GatewayTestSupport.prepare(settings()));
    }

    @AfterAll
    protected final void stopFakeProviders() {
        fakeProviders.forEach(WireMockServer::stop);
    }
}
