package io.jobgate.adapter;

import java.net.URI;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

import org.apache.camel.Exchange;
import org.apache.camel.Message;
import software.amazon.awssdk.http.ContentStreamProvider;
import software.amazon.awssdk.http.SdkHttpMethod;
import software.amazon.awssdk.http.SdkHttpRequest;
import software.amazon.awssdk.http.auth.aws.signer.AwsV4HttpSigner;
import software.amazon.awssdk.http.auth.spi.signer.SignedRequest;
import software.amazon.awssdk.identity.spi.AwsCredentialsIdentity;
import software.amazon.awssdk.identity.spi.AwsSessionCredentialsIdentity;

/**
 * Adapter helper (bean {@code awsSigV4}): signs the exchange's outgoing HTTP request with AWS Signature Version 4,
 * for any adapter of an AWS API (JSON 1.1 services such as Amazon Transcribe, REST-JSON ones alike). Called as
 * the last step before the HTTP call, {@code method: "sign(*, '<service>')"}, the service's signing name
 * ({@code transcribe}); it signs what camel-http will send:
 *
 * <ul>
 *   <li>the address: header {@code CamelHttpUri} (required: the route sets it to the URL it calls; camel-http sends
 *       there) with {@code CamelHttpQuery}, if any;</li>
 *   <li>the method: header {@code CamelHttpMethod} (default POST);</li>
 *   <li>the headers {@code Content-Type} and every {@code X-Amz-*} the route set (call with
 *       {@code contentTypeCharsetEnabled=false}, so the Content-Type goes out as signed);</li>
 *   <li>the body, made {@code byte[]} here so that the bytes signed are the bytes sent.</li>
 * </ul>
 *
 * <p>It adds {@code Authorization} ({@code AWS4-HMAC-SHA256 Credential=<key id>/<date>/<region>/<service>/aws4_request,
 * SignedHeaders=…, Signature=…}), {@code X-Amz-Date} and, with a session token, {@code X-Amz-Security-Token}; the
 * {@code Host} it signs is the URL's, which the HTTP client sends. Credentials and region are the calling provider's
 * settings ({@code JobgateProvider}): {@code aws-region}, {@code aws-access-key-id}, {@code aws-secret-access-key},
 * {@code aws-session-token} (optional), from the environment in production. With {@code aws-credentials = default-chain}
 * the keys come instead from the AWS SDK's default credentials chain (the {@code AWS_*} environment, a web identity
 * token as EKS IRSA and Pod Identity give a pod, a profile, the container or instance role), refreshed as they expire:
 * no long-lived key in the gateway's settings. Without credentials or region the request is not sent: the adapter's
 * answer is {@code auth}, naming the settings.
 */
public final class AwsSigV4 {

    /** The provider settings it reads, {@code jobgate.provider.<name>.<key>} (also in ProviderKeys: every provider may have them). */
    public static final String REGION = "aws-region";
    public static final String ACCESS_KEY_ID = "aws-access-key-id";
    public static final String SECRET_ACCESS_KEY = "aws-secret-access-key";
    public static final String SESSION_TOKEN = "aws-session-token";
    /** {@code keys} (the default: the three settings above) or {@code default-chain} (the AWS SDK's default credentials chain). */
    public static final String CREDENTIALS = "aws-credentials";

    private final AwsV4HttpSigner signer = AwsV4HttpSigner.create();
    /** Per provider, the SDK's default chain: made once, it caches what it found and refreshes temporary credentials. */
    private final Map<String, software.amazon.awssdk.auth.credentials.AwsCredentialsProvider> chains =
            new java.util.concurrent.ConcurrentHashMap<>();

    public void sign(Exchange exchange, String service) {
        String provider = exchange.getProperty(AdapterContract.PROVIDER, String.class);
        String region = setting(exchange, provider, REGION);
        String keyId = setting(exchange, provider, ACCESS_KEY_ID);
        String secret = setting(exchange, provider, SECRET_ACCESS_KEY);
        String token = setting(exchange, provider, SESSION_TOKEN);
        String source = Optional.ofNullable(setting(exchange, provider, CREDENTIALS)).orElse("keys");
        AwsCredentialsIdentity identity;
        String missing;
        switch (source) {
            case "keys" -> {
                identity = keyId == null || secret == null ? null : token == null ? AwsCredentialsIdentity.create(keyId, secret)
                        : AwsSessionCredentialsIdentity.create(keyId, secret, token);
                missing = "set jobgate.provider." + provider + ".aws-access-key-id and .aws-secret-access-key (or ."
                        + CREDENTIALS + " = default-chain)";
            }
            case "default-chain" -> {
                identity = fromDefaultChain(provider);
                missing = "the AWS SDK's default credentials chain found none (AWS_ACCESS_KEY_ID, a web identity token, a profile, "
                        + "the container or instance role)";
            }
            default -> throw new IllegalStateException("jobgate.provider." + provider + "." + CREDENTIALS + " is '" + source
                    + "': keys or default-chain");
        }
        if (region == null || identity == null) {
            exchange.setProperty(AdapterContract.OUTCOME, "auth");
            exchange.setProperty(AdapterContract.ERROR_MESSAGE, "no AWS credentials to sign with: " + (region == null
                    ? "set jobgate.provider." + provider + ".aws-region" + (identity == null ? "; " + missing : "") : missing));
            exchange.setRouteStop(true);
            return;
        }
        Message message = exchange.getMessage();
        String address = message.getHeader(Exchange.HTTP_URI, String.class);
        if (address == null || address.isBlank()) {
            throw new IllegalStateException("awsSigV4: set the header " + Exchange.HTTP_URI + " to the URL the request goes to");
        }
        String query = message.getHeader(Exchange.HTTP_QUERY, String.class);
        byte[] body = message.getBody(byte[].class);
        if (body == null) {
            body = new byte[0];
        }
        message.setBody(body);
        SdkHttpRequest.Builder request = SdkHttpRequest.builder()
                .method(SdkHttpMethod.fromValue(message.getHeader(Exchange.HTTP_METHOD, "POST", String.class).toUpperCase(Locale.ROOT)))
                .uri(URI.create(query == null || query.isEmpty() ? address : address + "?" + query));
        for (Map.Entry<String, Object> header : message.getHeaders().entrySet()) {
            String name = header.getKey().toLowerCase(Locale.ROOT);
            if (header.getValue() != null && (name.startsWith("x-amz-") || name.equals("content-type"))
                    && !name.equals("x-amz-date") && !name.equals("x-amz-security-token")) {
                request.putHeader(header.getKey(), header.getValue().toString());
            }
        }
        byte[] payload = body;
        AwsCredentialsIdentity signWith = identity;
        SignedRequest signed = signer.sign(r -> r.identity(signWith).request(request.build())
                .payload(ContentStreamProvider.fromByteArrayUnsafe(payload))
                .putProperty(AwsV4HttpSigner.SERVICE_SIGNING_NAME, service)
                .putProperty(AwsV4HttpSigner.REGION_NAME, region));
        signed.request().headers().forEach((name, values) -> {
            // Host: the HTTP client sends the URL's, which is what was signed.
            if (!name.equalsIgnoreCase("host") && !values.isEmpty()) {
                message.setHeader(name, values.get(0));
            }
        });
    }

    /** The default chain's credentials now, or null when it has none (the chain says why in its exception). */
    private AwsCredentialsIdentity fromDefaultChain(String provider) {
        software.amazon.awssdk.auth.credentials.AwsCredentialsProvider chain = chains.computeIfAbsent(provider,
                p -> software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider.builder().build());
        try {
            return chain.resolveCredentials();
        } catch (software.amazon.awssdk.core.exception.SdkClientException none) {
            return null;
        }
    }

    private static String setting(Exchange exchange, String provider, String key) {
        Optional<String> value = exchange.getContext().getPropertiesComponent().resolveProperty("jobgate.provider." + provider + "." + key);
        return value.map(String::trim).filter(v -> !v.isEmpty()).orElse(null);
    }
}
