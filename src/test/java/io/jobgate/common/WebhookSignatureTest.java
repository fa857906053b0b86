package io.jobgate.common;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** Standard Webhooks verification: the signed content, several signatures, tolerance, tampering. */
class WebhookSignatureTest {

    static final String SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    static final byte[] BODY = "{\"id\":\"p1\",\"status\":\"succeeded\"}".getBytes(StandardCharsets.UTF_8);
    static final Instant NOW = Instant.ofEpochSecond(1_800_000_000L);
    static final Duration FIVE_MINUTES = Duration.ofMinutes(5);

    static String v1(String secret, String id, String ts, byte[] body) {
        return "v1," + Base64.getEncoder().encodeToString(WebhookSignature.sign(secret, id, ts, body));
    }

    @Test
    void acceptsTheSignatureOfIdTimestampAndRawBodyAmongSeveral() {
        String ts = Long.toString(NOW.getEpochSecond());
        String header = "v1,bm90IGl0 " + v1(SECRET, "msg_1", ts, BODY) + " v1a,ZWQyNTUxOQ==";
        assertThat(WebhookSignature.verify(SECRET, "msg_1", ts, header, BODY, NOW, FIVE_MINUTES)).isEmpty();
    }

    @Test
    void matchesTheSpecificationsSignedContent() throws Exception {
        // HMAC-SHA256(key = base64-decoded secret without its prefix, "<id>.<timestamp>.<body>")
        javax.crypto.Mac mac = javax.crypto.Mac.getInstance("HmacSHA256");
        mac.init(new javax.crypto.spec.SecretKeySpec(Base64.getDecoder().decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), "HmacSHA256"));
        byte[] expected = mac.doFinal(("msg_2.1800000000." + new String(BODY, StandardCharsets.UTF_8)).getBytes(StandardCharsets.UTF_8));
        assertThat(WebhookSignature.sign(SECRET, "msg_2", "1800000000", BODY)).isEqualTo(expected);
    }

    @Test
    void refusesTamperedBodiesOtherIdsWrongSecretsAndStaleOrFutureTimestamps() {
        String ts = Long.toString(NOW.getEpochSecond());
        String good = v1(SECRET, "msg_3", ts, BODY);
        byte[] tampered = "{\"id\":\"p1\",\"status\":\"failed\"}".getBytes(StandardCharsets.UTF_8);
        assertThat(WebhookSignature.verify(SECRET, "msg_3", ts, good, tampered, NOW, FIVE_MINUTES)).isPresent();
        assertThat(WebhookSignature.verify(SECRET, "msg_4", ts, good, BODY, NOW, FIVE_MINUTES)).isPresent();
        assertThat(WebhookSignature.verify("whsec_" + Base64.getEncoder().encodeToString(new byte[24]), "msg_3", ts, good, BODY,
                NOW, FIVE_MINUTES)).isPresent();
        assertThat(WebhookSignature.verify(SECRET, "msg_3", ts, good, BODY, NOW.plusSeconds(301), FIVE_MINUTES))
                .hasValueSatisfying(why -> assertThat(why).contains("tolerance"));
        assertThat(WebhookSignature.verify(SECRET, "msg_3", ts, good, BODY, NOW.minusSeconds(301), FIVE_MINUTES)).isPresent();
        assertThat(WebhookSignature.verify(SECRET, "msg_3", "yesterday", good, BODY, NOW, FIVE_MINUTES)).isPresent();
        assertThat(WebhookSignature.verify(SECRET, "msg_3", ts, null, BODY, NOW, FIVE_MINUTES)).isPresent();
        assertThat(WebhookSignature.verify(SECRET, "msg_3", ts, "v1,not base64!", BODY, NOW, FIVE_MINUTES)).isPresent();
    }
}
