package io.jobgate.relay;

import java.util.Map;

/** The broker contract on the embedded Artemis configured from artemis/broker.xml. */
class EmbeddedBrokerFlowsTest extends BrokerFlowsContract {

    @Override
    protected Map<String, String> settings() {
        return Map.of("jobgate.broker.url", "");
    }

    @Override
    String producerHostPort() {
        return "127.0.0.1:" + System.getProperty("jobgate.broker.embedded-port");
    }
}
