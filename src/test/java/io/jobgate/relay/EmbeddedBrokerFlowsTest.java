package io.jobgate.relay;

import java.util.Map;

import io.jobgate.Gateway;
import io.jobgate.support.ApiClient;
import io.jobgate.support.GatewayTestSupport;
import org.apache.camel.test.main.junit5.CamelMainTest;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;

/** The broker contract on the embedded Artemis configured from artemis/broker.xml. */
@CamelMainTest(mainClass = Gateway.class, propertyPlaceholderLocations = Gateway.SETTINGS)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class EmbeddedBrokerFlowsTest extends BrokerFlowsContract {

    @BeforeAll
    void boot() throws Exception {
        api = new ApiClient(GatewayTestSupport.prepare(Map.of("jobgate.broker.url", "")));
    }

    @Override
    String producerHostPort() {
        return "127.0.0.1:" + System.getProperty("jobgate.broker.embedded-port");
    }
}
