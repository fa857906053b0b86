package io.jobgate.support;

import com.github.tomakehurst.wiremock.WireMockServer;

import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;

/** A provider stand-in that speaks HTTP like the real one (WireMock on loopback), one per test class. */
public final class FakeProvider {

    private FakeProvider() {
    }

    public static WireMockServer start() {
        WireMockServer fake = new WireMockServer(options().dynamicPort().bindAddress("127.0.0.1"));
        fake.start();
        return fake;
    }
}
