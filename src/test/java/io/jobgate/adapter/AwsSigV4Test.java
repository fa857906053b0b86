package io.jobgate.adapter;

import java.util.Properties;

import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Where {@link AwsSigV4} takes its credentials from: the provider's key settings, or with
 * {@code aws-credentials = default-chain} the AWS SDK's default chain (here its system-property source,
 * {@code aws.accessKeyId}, as a pod's web identity or instance role would give them); and a request it cannot
 * sign is not sent but answered {@code auth}, naming what is missing.
 */
class AwsSigV4Test {

    private final CamelContext camel = new DefaultCamelContext();
    private final AwsSigV4 signer = new AwsSigV4();

    @AfterEach
    void clearChain() {
        System.clearProperty("aws.accessKeyId");
        System.clearProperty("aws.secretAccessKey");
    }

    @Test
    void theProvidersKeysSignTheRequest() {
        settings("keys", "AKIDFROMSETTINGS", "secret");
        Exchange exchange = request();
        signer.sign(exchange, "transcribe");
        assertThat(exchange.getProperty(AdapterContract.OUTCOME)).isNull();
        assertThat(exchange.getMessage().getHeader("Authorization", String.class))
                .startsWith("AWS4-HMAC-SHA256 Credential=AKIDFROMSETTINGS/")
                .contains("/eu-west-1/transcribe/aws4_request", "SignedHeaders=", "Signature=");
        assertThat(exchange.getMessage().getHeader("X-Amz-Date", String.class)).matches("\\d{8}T\\d{6}Z");
    }

    @Test
    void theDefaultChainSignsWithWhatItFindsAndTheKeySettingsAreNotNeeded() {
        System.setProperty("aws.accessKeyId", "AKIDFROMTHECHAIN");
        System.setProperty("aws.secretAccessKey", "chain-secret");
        settings("default-chain", null, null);
        Exchange exchange = request();
        signer.sign(exchange, "transcribe");
        assertThat(exchange.getProperty(AdapterContract.OUTCOME)).isNull();
        assertThat(exchange.getMessage().getHeader("Authorization", String.class)).startsWith("AWS4-HMAC-SHA256 Credential=AKIDFROMTHECHAIN/");
    }

    @Test
    void withoutKeysTheRequestIsNotSentAndTheAnswerIsAuthNamingTheSettings() {
        settings(null, null, null);
        Exchange exchange = request();
        signer.sign(exchange, "transcribe");
        assertThat(exchange.getProperty(AdapterContract.OUTCOME)).isEqualTo("auth");
        assertThat(exchange.getProperty(AdapterContract.ERROR_MESSAGE, String.class))
                .contains("jobgate.provider.aws-test.aws-access-key-id", "aws-credentials = default-chain");
        assertThat(exchange.isRouteStop()).isTrue();
        assertThat(exchange.getMessage().getHeader("Authorization")).isNull();
    }

    @Test
    void anUnknownCredentialsSourceIsASettingsError() {
        settings("instance", "AKID", "secret");
        assertThatThrownBy(() -> signer.sign(request(), "transcribe")).hasMessageContaining("keys or default-chain");
    }

    private void settings(String source, String keyId, String secret) {
        Properties p = new Properties();
        p.setProperty("jobgate.provider.aws-test.aws-region", "eu-west-1");
        if (source != null) {
            p.setProperty("jobgate.provider.aws-test.aws-credentials", source);
        }
        if (keyId != null) {
            p.setProperty("jobgate.provider.aws-test.aws-access-key-id", keyId);
            p.setProperty("jobgate.provider.aws-test.aws-secret-access-key", secret);
        }
        camel.getPropertiesComponent().setInitialProperties(p);
    }

    private Exchange request() {
        Exchange exchange = new DefaultExchange(camel);
        exchange.setProperty(AdapterContract.PROVIDER, "aws-test");
        exchange.getMessage().setHeader(Exchange.HTTP_URI, "https://transcribe.eu-west-1.amazonaws.com/");
        exchange.getMessage().setHeader("Content-Type", "application/x-amz-json-1.1");
        exchange.getMessage().setHeader("X-Amz-Target", "Transcribe.StartTranscriptionJob");
        exchange.getMessage().setBody("{\"TranscriptionJobName\": \"jobgate-x-1\"}");
        return exchange;
    }
}
