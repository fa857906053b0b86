package io.jobgate.support;

import com.github.tomakehurst.wiremock.WireMockServer;

import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;

/** A provider stand-in that speaks HTTP like the real one (WireMock on loopback), one per test class. */
public final class FakeProvider {

    private FakeProvider() {
    }

    /** With {@code rules}: transformers that make it enforce the provider's documented rules ({@link GptImageRules}, {@link FluxProRules}). */
    public static WireMockServer start(com.github.tomakehurst.wiremock.extension.Extension... rules) {
        WireMockServer fake = new WireMockServer(options().dynamicPort().bindAddress("127.0.0.1").extensions(rules));
        fake.start();
        return fake;
    }
}
