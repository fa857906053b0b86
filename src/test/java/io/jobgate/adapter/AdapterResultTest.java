package io.jobgate.adapter;

import java.time.Duration;
import java.time.Instant;

import io.jobgate.job.ErrorCategory;
import org.apache.camel.Exchange;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The wait an adapter's 429 asks for, read by every adapter alike from the reply's headers. */
class AdapterResultTest {

    /** Started, as a running gateway's is: its messages' headers are case-insensitive, as HTTP's are. */
    static final DefaultCamelContext CONTEXT = new DefaultCamelContext();

    @BeforeAll
    static void start() {
        CONTEXT.start();
    }

    @AfterAll
    static void stop() {
        CONTEXT.stop();
    }

    static Exchange reply(int status, String... headers) {
        Exchange call = new DefaultExchange(CONTEXT);
        call.getMessage().setHeader(Exchange.HTTP_RESPONSE_CODE, status);
        for (int i = 0; i < headers.length; i += 2) {
            call.getMessage().setHeader(headers[i], headers[i + 1]);
        }
        call.getMessage().setBody("{\"error\": {\"code\": \"429\", \"message\": \"Requests to the Audio_Transcriptions Operation have exceeded the call rate limit.\"}}");
        return call;
    }

    @Test
    void aRetryAfterMsHeaderIsTheWaitBeforeRetryAfter() {
        AdapterResult result = AdapterResult.of(reply(429, "retry-after-ms", "1200", "Retry-After", "2"));

        assertThat(result.category()).isEqualTo(ErrorCategory.RATE_LIMITED);
        assertThat(result.retryAfter()).isEqualTo("1200ms");
        Instant now = Instant.parse("2026-12-01T03:36:31Z");
        RateLimitWait wait = RateLimitWait.after(result.retryAfter(), now, Duration.ofMillis(100), Duration.ofSeconds(60));
        assertThat(wait.until()).isEqualTo(now.plusMillis(1200));
        assertThat(wait.headerUnderstood()).isTrue();
    }

    @Test
    void headerNamesAreReadWhateverTheirCase() {
        assertThat(AdapterResult.of(reply(429, "Retry-After-Ms", "300")).retryAfter()).isEqualTo("300ms");
        assertThat(AdapterResult.of(reply(429, "retry-after", "4")).retryAfter()).isEqualTo("4");
    }

    @Test
    void withoutRetryAfterMsRetryAfterIsKeptAsSent() {
        assertThat(AdapterResult.of(reply(429, "Retry-After", "Sun, 06 Nov 1994 08:49:37 GMT")).retryAfter())
                .isEqualTo("Sun, 06 Nov 1994 08:49:37 GMT");
        assertThat(AdapterResult.of(reply(429)).retryAfter()).isNull();
    }

    @Test
    void theAdaptersOwnWordWinsOverTheHeaders() {
        Exchange call = reply(429, "retry-after-ms", "1200", "Retry-After", "2");
        call.setProperty(AdapterContract.RETRY_AFTER, "7");
        assertThat(AdapterResult.of(call).retryAfter()).isEqualTo("7");
    }

    @Test
    void anUnreadableRetryAfterMsAloneIsAPauseOfUnknownLength() {
        AdapterResult result = AdapterResult.of(reply(429, "retry-after-ms", "later"));
        Instant now = Instant.parse("2026-12-01T03:36:31Z");
        RateLimitWait wait = RateLimitWait.after(result.retryAfter(), now, Duration.ofMillis(100), Duration.ofSeconds(60));
        assertThat(wait.until()).isEqualTo(now.plusSeconds(60));
        assertThat(wait.headerUnderstood()).isFalse();
    }
}
